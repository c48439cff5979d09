"""Generated launch scripts: a plan from the profile and facts, rendered as bash."""

from __future__ import annotations

from shop_r1_doctor.launch.plan import LaunchPlan, LaunchRequest, plan_launch
from shop_r1_doctor.launch.script import LaunchFiles, render_launch

__all__ = ["LaunchFiles", "LaunchPlan", "LaunchRequest", "plan_launch", "render_launch"]
