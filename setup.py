"""The one packaging step ``pyproject.toml`` cannot state: where the prompt files install.

The prompt templates live in the checkout's top-level ``prompts/``, beside ``strategic_arena/``
and ``opponents/`` (they are data that users' prompt sets override, not code). A wheel installs
them inside the package, as ``strategic_arena/prompts/``, so an installed package carries its own
prompts; ``strategic_arena.prompt_files.package_root`` finds them in either place. Folders are
listed as packages, data-only ones included, as setuptools asks of every folder that ships files
(``opponents/policies/`` too). Everything else about the build, the package data included, is in
``pyproject.toml``.
"""

from setuptools import find_namespace_packages, setup

PROMPTS = "strategic_arena.prompts"
NOT_PACKAGES = ["*__pycache__*"]

setup(
    packages=[
        *find_namespace_packages(
            include=["strategic_arena", "strategic_arena.*", "opponents", "opponents.*"],
            exclude=NOT_PACKAGES,
        ),
        PROMPTS,
        *(
            f"{PROMPTS}.{folder}"
            for folder in find_namespace_packages(where="prompts", exclude=NOT_PACKAGES)
        ),
    ],
    package_dir={PROMPTS: "prompts"},
)
