"""Where Vix Note looks for extensions, resolved from the environment as Vix Note does."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

INSTALLED_JSON = "installed.json"


@dataclass(frozen=True)
class Places:
    """The global prefix and the home folder Vix Note reads from."""

    prefix: Path
    home: Path

    @classmethod
    def from_env(cls, prefix: str | os.PathLike[str] | None = None,
                 env: dict[str, str] | None = None) -> Places:
        """`--prefix`, else `$VIX_GLOBAL_PREFIX` (if not empty), else `$HOME/.vix/global`.

        Vix Note reads `$HOME` itself (no password-database fallback) and uses
        `.vix/...` relative to its working directory when HOME is unset.
        """
        env = dict(os.environ) if env is None else env
        home = Path(env.get("HOME") or ".")
        chosen = prefix or env.get("VIX_GLOBAL_PREFIX") or home / ".vix" / "global"
        return cls(Path(os.path.abspath(chosen)), Path(os.path.abspath(home)))

    @property
    def installed_json(self) -> Path:
        return self.prefix / INSTALLED_JSON

    @property
    def lock_file(self) -> Path:
        return self.prefix / (INSTALLED_JSON + ".lock")

    @property
    def bin_dir(self) -> Path:
        return self.prefix / "bin"

    @property
    def disabled_json(self) -> Path:
        """Vix Note's list of extensions the user switched off."""
        return self.home / ".vix" / "note" / "extensions.json"

    def package_dir(self, package_id: str) -> Path:
        """This package's own folder (its `installed_path`), which nothing else shares."""
        return self.prefix / "packages" / package_id


def project_package_dir(project: Path, name: str) -> Path:
    """`<project>/.vix/deps/<name>`, the folder Vix Note's project discovery scans."""
    return project / ".vix" / "deps" / name
