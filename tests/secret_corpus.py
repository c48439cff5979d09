"""Planted secrets: fake values of real shapes, built by concatenation.

No token-shaped literal sits in this file (scanners and reviewers would flag it), and
every value is obviously fake. `CASES` pairs each secret with the text it is planted
in; `SURVIVORS` must come out of redaction unchanged.
"""

from __future__ import annotations

HEX40 = "9f3a" * 10
SECRETS: dict[str, str] = {
    "hf": "hf_" + "Ab3" * 11 + "x",
    "hf_org": "api_org_" + "Zy8" * 11,
    "openai": "sk-" + "proj-" + "Zx9" * 16,
    "anthropic": "sk-" + "ant-api03-" + "Q1w" * 30,
    "github": "gh" + "p_" + "R7t" * 12,
    "github_pat": "github" + "_pat_" + "11ABC" + "D2e" * 25,
    "gitlab": "gl" + "pat-" + "k9" * 10,
    "aws_id": "AK" + "IA" + "QZ7X" * 4,
    "aws_secret": "wJalr" + "XUtnF" * 7,
    "wandb": HEX40,
    "slack": "xo" + "xb-" + "1234567890-" + "AbCdEf" * 4,
    "jwt": "ey" + "JhbGciOiJIUzI1NiJ9" + "." + "ey" + "JzdWIiOiIxMjM0In0" + "." + "S1gn4tur3" * 3,
    "pem_body": "MIIEow" + "Ab12" * 16,
    "google": "AI" + "za" + "Sy" + "B4c" * 11,
    "stripe": "sk" + "_live_" + "4eC3" * 6,
    "password": "Pa55w0rd-" + "horse",
    "bright_data": "3f0c" * 16,
    "bearer": "q8Z" * 10,
    "url_password": "s3cr3t" + "PW",
    "pg_password": "pgPa55" + "word",
    "sig": "ab12" * 16,
    "client_secret": "a1b2c3d4" * 5,
    "b64_token": "QmFzZTY0" + "U2VjcmV0" * 4 + "Xy9",
    "telegram": "123456789" + ":AA" + "Hd" * 16 + "x",
    "plain_option": "plain" + "Value123",
    "query_token": "abc123" + "XYZ789",
    "ps_key": "ps" + "Key" + "998877",
    "kwarg_token": "kw" + "Tok" + "en4455",
    "yaml_key": "yaml" + "Secret" + "77",
    # Shapes with no row above, for the bare-prose rows below.
    "google_oauth": "ya" + "29." + "A0Ar" * 6,
    "slack_app": "xa" + "pp-1-" + "A0B1C2D3E4F5",
    "slack_hook": "T0001/B0002/" + "XXyy" * 6,
    "npm": "npm_" + "N0p" * 12,
    "pypi": "pypi-" + "AgEIcHlwaS5vcmc" + "Q1w2" * 10,
    "groq": "gsk_" + "G7q" * 14,
    "replicate": "r8_" + "R8p" * 11,
    "tavily": "tvly-" + "T4v" * 8,
    "wandb_local": "local-" + "5e6f" * 10,
    # Values of no particular shape after a secret word (issue 11): only layer 5 sees them.
    "after_word": "s3cr3t" + "Value9",
    "after_word_short": "abc123" + "XYZ789",
    # Credentials only one layer sees: a short Basic credential (the header rule), a
    # letters-only bearer token (the Bearer rule: layer 5 leaves plain words alone).
    "basic": "dXNlcjpw" + "YXNz",
    "bearer_letters": "Qwerty" + "Uiopas" + "dfgh",
}
S = SECRETS
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----\n" + S["pem_body"] + "\n-----END RSA PRIVATE KEY-----"

# (secret name, text it is planted in): env-style lines, command lines, log lines, tracebacks.
CASES: list[tuple[str, str]] = [
    ("hf", "export HF_TOKEN=" + S["hf"]),
    ("hf", "huggingface-cli login --token " + S["hf"]),
    ("hf", "hf auth login --token=" + S["hf"] + " --add-to-git-credential"),
    ("hf", 'model = AutoModel.from_pretrained("Qwen/Qwen2.5-0.5B", token="' + S["hf"] + '")'),
    ("hf", "401 Client Error: Unauthorized (token " + S["hf"] + " is invalid)"),
    ("hf", "git clone https://user:" + S["hf"] + "@huggingface.co/datasets/x"),
    ("hf_org", "HUGGING_FACE_HUB_TOKEN: " + S["hf_org"]),
    ("openai", "OPENAI_API_KEY=" + S["openai"] + " python eval.py"),
    ("openai", "openai.AuthenticationError: Incorrect API key provided: " + S["openai"]),
    ("anthropic", "client = Anthropic(api_key='" + S["anthropic"] + "')"),
    ("github", "git clone https://" + S["github"] + "@github.com/org/repo.git"),
    ("github", "git clone https://x-access-token:" + S["github"] + "@github.com/org/repo"),
    ("github_pat", "GH_TOKEN=" + S["github_pat"]),
    ("gitlab", "pip install git+https://oauth2:" + S["gitlab"] + "@gitlab.com/g/p.git"),
    ("aws_id", "aws_access_key_id = " + S["aws_id"]),
    ("aws_id", "botocore.exceptions.ClientError: key " + S["aws_id"] + " not authorised"),
    ("aws_secret", "aws_secret_access_key = " + S["aws_secret"]),
    ("aws_secret", "AWS_SECRET_ACCESS_KEY=" + S["aws_secret"]),
    ("aws_secret", '{"SecretAccessKey": "' + S["aws_secret"] + '"}'),
    ("wandb", "WANDB_API_KEY=" + S["wandb"]),
    ("wandb", "wandb login " + S["wandb"]),
    ("wandb", "wandb: Appending key for api.wandb.ai to your netrc file: " + S["wandb"]),
    ("wandb", "wandb.errors.AuthenticationError: API key " + S["wandb"] + " rejected"),
    ("slack", "SLACK_BOT=" + S["slack"]),
    ("slack", "posting to slack with " + S["slack"]),
    ("jwt", "session cookie " + S["jwt"]),
    ("jwt", "requests.get(url, headers={'X-Id': '" + S["jwt"] + "'})"),
    ("pem_body", "key file:\n" + PEM + "\nloaded"),
    ("pem_body", '{"private_key": "' + PEM.replace("\n", "\\n") + '"}'),
    ("pem_body", "tail of log\n-----BEGIN OPENSSH PRIVATE KEY-----\n" + S["pem_body"]),
    ("google", "GEMINI=" + S["google"]),
    ("stripe", "charge failed for " + S["stripe"]),
    ("password", "mysql --password " + S["password"] + " -h db"),
    ("password", "DB_PASSWORD=" + S["password"]),
    ("password", "password: " + S["password"]),
    (
        "password",
        '  File "run.py", line 3, in <module>\n    connect(passwd=\'' + S["password"] + "')",
    ),
    ("bright_data", "python test_bright_data_api.py --api-key " + S["bright_data"] + " --zone z"),
    ("bright_data", "Bright Data API key configured: " + S["bright_data"]),
    ("bearer", "Authorization: Bearer " + S["bearer"]),
    ("bearer", "curl -H 'Authorization: Bearer " + S["bearer"] + "' https://api.example.com"),
    ("bearer", '{"headers": {"Authorization": "Bearer ' + S["bearer"] + '"}}'),
    ("bearer", "sending Bearer " + S["bearer"]),
    ("url_password", "HTTPS_PROXY=http://alice:" + S["url_password"] + "@proxy.corp:3128"),
    (
        "url_password",
        "pip install --index-url https://bob:" + S["url_password"] + "@pypi.corp/simple x",
    ),
    ("pg_password", "DATABASE_URL=postgres://app:" + S["pg_password"] + "@db:5432/app"),
    ("sig", "GET https://b.s3.amazonaws.com/f?X-Amz-Signature=" + S["sig"] + "&X-Amz-Date=1"),
    ("sig", "https://acct.blob.core.windows.net/c/f?sv=2020&sig=" + S["sig"]),
    ("client_secret", "client secret: " + S["client_secret"]),
    ("client_secret", "--client-secret " + S["client_secret"]),
    ("b64_token", "refresh token " + S["b64_token"]),
    ("b64_token", "ACCESS_TOKEN=" + S["b64_token"]),
    ("telegram", "bot " + S["telegram"] + " started"),
    ("plain_option", "python train.py --hf_token=" + S["plain_option"]),
    ("plain_option", "python train.py --hub-token " + S["plain_option"] + " --push"),
    ("query_token", "GET https://api.example.com/v1/items?token=" + S["query_token"] + "&page=2"),
    ("ps_key", '$env:OPENAI_API_KEY="' + S["ps_key"] + '"'),
    ("ps_key", "set WANDB_API_KEY=" + S["ps_key"]),
    ("kwarg_token", "    trainer = Trainer(hub_token='" + S["kwarg_token"] + "', args=args)"),
    (
        "kwarg_token",
        "TypeError: __init__() got an unexpected keyword argument use_auth_token="
        + S["kwarg_token"],
    ),
    ("yaml_key", "wandb:\n  api_key: " + S["yaml_key"] + "\n  project: shop-r1"),
    # A value after a secret word, whatever its shape (issue 11), 40-hex wandb keys included.
    ("wandb", "login " + S["wandb"]),
    ("wandb", "huggingface-cli login " + S["wandb"]),
    ("wandb", "key=" + S["wandb"]),
    ("wandb", "my key is " + S["wandb"]),
    ("wandb", "auth " + S["wandb"]),
    ("wandb", "api key ok; then token " + S["wandb"]),
    ("bright_data", "secret " + S["bright_data"]),
    ("after_word", "API key: " + S["after_word"]),
    ("after_word", "password was " + S["after_word"]),
    ("after_word_short", "token " + S["after_word_short"]),
    ("after_word_short", "login: " + S["after_word_short"]),
    ("basic", "Proxy-Authorization: Basic " + S["basic"]),
    ("bearer_letters", "retrying with Bearer " + S["bearer_letters"]),
]

# One row per token shape (redact._TOKEN_SHAPES, the PEM block), in bare prose: no hint
# word (key, token, secret, auth, login, wandb, bearer, password, ...) and no `name=`, so
# only the shape's own rule can find it. Deleting any one rule leaves one of these.
BARE: list[tuple[str, str]] = [
    ("hf", "copied " + S["hf"] + " from the notes"),
    ("hf_org", "found " + S["hf_org"] + " in the log"),
    ("openai", "sent " + S["openai"] + " along"),
    ("stripe", "charged with " + S["stripe"] + " today"),
    ("github", "cloned using " + S["github"] + " yesterday"),
    ("github_pat", "used " + S["github_pat"] + " once"),
    ("gitlab", "tried " + S["gitlab"] + " twice"),
    ("aws_id", "saw " + S["aws_id"] + " in the dump"),
    ("google", "maps via " + S["google"] + " work"),
    ("google_oauth", "got " + S["google_oauth"] + " back"),
    ("slack", "bot " + S["slack"] + " joined"),
    ("slack_app", "app " + S["slack_app"] + " joined"),
    ("slack_hook", "posted to https://hooks.slack.com/services/" + S["slack_hook"] + " at noon"),
    ("npm", "published by " + S["npm"] + " later"),
    ("pypi", "uploaded with " + S["pypi"] + " later"),
    ("groq", "called " + S["groq"] + " again"),
    ("replicate", "ran " + S["replicate"] + " again"),
    ("tavily", "searched via " + S["tavily"] + " again"),
    ("wandb_local", "server said " + S["wandb_local"] + " first"),
    ("telegram", "bot " + S["telegram"] + " started"),
    ("jwt", "session " + S["jwt"] + " expired"),
    ("pem_body", "attached below\n" + PEM + "\nend of file"),
]

# Real keys of these shapes carry `_` and `-` in their bodies (OpenAI project keys,
# Google keys, `tvly-dev-...`); the rows above happen to have none, so a shape whose
# character class lost `_` or `-` would still match them. Each value here has both
# (where its shape allows them) away from its ends, in bare prose like BARE.
SEPARATED: dict[str, str] = {
    "openai": "sk-" + "proj-" + "Zx9-Qw_" * 6,
    "anthropic": "sk-" + "ant-api03-" + "Q1w-E2r_" * 5 + "AA",
    "github_pat": "github" + "_pat_" + "11ABC" + "D2e_" * 20,
    "gitlab": "gl" + "pat-" + "k9_x-" * 5,
    "google": "AI" + "za" + "SyB4c-D5e_" * 3 + "F6g-h",
    "google_oauth": "ya" + "29." + "A0Ar-" + "B1b_" * 5,
    "slack_app": "xa" + "pp-1-" + "A0B1C2D3E4F5-" + "1234567890-" + "ab12cd34",
    "slack": "xo" + "xb-" + "1234567890-" + "1234567890123-" + "AbCdEf" * 4,
    "pypi": "pypi-" + "AgEIcHlwaS5vcmc" + "Q1w2_-" * 9,
    "tavily": "tvly-" + "dev-" + "T4v_" * 6,
    "telegram": "123456789" + ":AA" + "Hd_-" * 8 + "x",
    "jwt": "ey"
    + "JhbGciOiJIUzI1NiJ9"
    + "."
    + "ey"
    + "JzdWIi-OiIx_MjM0In0"
    + "."
    + "S1gn_4tur3-" * 3,
}

# (secret name, env var name, value): what an env probe sees.
ENV_CASES: list[tuple[str, str, str]] = [
    ("hf", "HF_TOKEN", S["hf"]),
    ("hf_org", "HUGGINGFACEHUB_API_TOKEN", S["hf_org"]),
    ("openai", "OPENAI_API_KEY", S["openai"]),
    ("anthropic", "ANTHROPIC_API_KEY", S["anthropic"]),
    ("github", "GITHUB_TOKEN", S["github"]),
    ("aws_id", "AWS_ACCESS_KEY_ID", S["aws_id"]),
    ("aws_secret", "AWS_SECRET_ACCESS_KEY", S["aws_secret"]),
    ("wandb", "WANDB_API_KEY", S["wandb"]),
    ("wandb", "WANDB_KEY", S["wandb"]),
    ("password", "PGPASSWORD", S["password"]),
    ("url_password", "HTTPS_PROXY", "http://alice:" + S["url_password"] + "@proxy:3128"),
    ("pg_password", "DATABASE_URL", "postgres://app:" + S["pg_password"] + "@db/app"),
    ("client_secret", "AZURE_CLIENT_SECRET", S["client_secret"]),
    ("plain_option", "BRIGHT_DATA_API_KEY", S["plain_option"]),
    ("plain_option", "MY_SERVICE_AUTH", S["plain_option"]),
    ("plain_option", "SESSION_COOKIE", S["plain_option"]),
    ("slack", "SLACK_WEBHOOK", S["slack"]),
    ("google", "GOOGLE_API_KEY", S["google"]),
]

WHEEL_SHA = "e3b0c442" * 8
COMMIT = "0c1d2e3f" * 5
SURVIVORS: list[str] = [
    # Hashes in their own context stay, even on a line that talks about keys or tokens.
    "api key ok; checked out commit " + COMMIT,
    "git checkout " + COMMIT + " before setting the token",
    "token refreshed, sha: " + WHEEL_SHA,
    "revision=" + COMMIT + " (the api_key is read from the env)",
    "pip install verl@" + COMMIT + " with a token in the env",
    "W&B API key is configured. Use `wandb login --relogin` to force relogin",
    "sort key 2",
    "missing key 'input_ids'",
    "Login successful",
    "torch 2.11.0+cu130",
    "torch==2.7.1+cu128",
    "Successfully installed vllm-0.10.1.1 transformers-4.57.1",
    "flash_attn-2.8.3+cu12torch2.7cxx11abiTRUE-cp310-cp310-linux_x86_64.whl",
    "Created wheel for flash-attn: filename=flash_attn-2.8.3-cp310-linux_x86_64.whl "
    "size=187653 sha256=" + WHEEL_SHA,
    "commit " + COMMIT,
    "verl @ git+https://github.com/volcengine/verl@" + COMMIT,
    "opencv-python-headless 4.12.0.88 requires numpy<2.3.0,>=2",
    "/usr/local/cuda/bin/nvcc",
    "/tmp/ray/session_2025-11-12_16-00-00_123456_789/logs",
    "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.8",
    "hf://datasets/BytedTsinghua-SIA/DAPO-Math-17k/data/dapo-math-17k.parquet",
    "Qwen/Qwen2.5-0.5B-Instruct",
    "--tokenizer_name Qwen/Qwen2.5-0.5B-Instruct",
    "max_new_tokens=512 max_prompt_length=1536",
    "pad_token: <|endoftext|>",
    "eos_token=<|im_end|>",
    "TOKENIZERS_PARALLELISM=false",
    "KeyError: 'gold_action'",
    "ImportError: flash_attn_2_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
    "NCCL version 2.21.5+cuda12.4",
    "http://127.0.0.1:8000/health/",
    "GPU-5f3c2b1a-7d4e-4c1b-9a2f-0e1d2c3b4a59",
    "HF_HUB_DISABLE_XET=1 HF_HUB_DOWNLOAD_TIMEOUT=600",
    "use_auth_token=True",
    "token=token,",
    "the token is invalid or expired",
    "Tokens per second: 1834.2",
    "ssh://git@github.com/org/repo.git",
    '  File "/usr/lib/python3.10/site-packages/torch/cuda/__init__.py", line 174, in is_available',
    "docker pull nvcr.io/nvidia/pytorch:25.01-py3",
    "image digest sha256:" + WHEEL_SHA,
]
