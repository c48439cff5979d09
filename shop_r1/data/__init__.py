"""Sessions of shopper steps: schema, files, synthetic and OPeRA sources, splits, prompts."""
