"""An sshd of the test's own, for the remote provisioners' SSH path: on a loopback alias
(127.0.0.2, which jupyter_client does not count as this host's, so the distributed
provisioner goes through SSH to it), on a free port, with its own host key, config and
`authorized_keys` in a temporary folder, and a client key the test generates. The client
side is a home folder (`home`, for the `HOME` of whatever connects) whose `~/.ssh` holds the
key and a known_hosts that names this sshd: paramiko, as the provisioner uses it, looks
there. Needs Debian's openssh-server (`.ci/run` installs it); `reason` says why not.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
from pathlib import Path

from support.poll import wait_until

SSHD = "/usr/sbin/sshd"
#: The loopback alias sshd listens on.
HOST = "127.0.0.2"
#: Seconds sshd has to accept connections (a busy machine).
START = 60.0


def reason() -> str | None:
    """Why no sshd can run here, or None."""
    if not os.path.exists(SSHD):
        return f"needs {SSHD} (Debian's openssh-server: apt-get install openssh-server; " \
               ".ci/run installs it)"
    if shutil.which("ssh-keygen") is None:
        return "needs ssh-keygen (Debian's openssh-client)"
    return None


def keygen(path: Path) -> str:
    """A new ed25519 key pair at `path` (and `path`.pub); the public key's line."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pyrelune-test",
                    "-f", str(path)], check=True, timeout=60, stdin=subprocess.DEVNULL)
    return path.with_suffix(".pub").read_text().strip()


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


class Sshd:
    """sshd on `HOST`:`port`, accepting this user's generated key only; `stop()` ends it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.home = folder / "home"
        ssh = self.home / ".ssh"
        ssh.mkdir(parents=True, mode=0o700)
        host_key = keygen(folder / "host_ed25519")
        (folder / "authorized_keys").write_text(keygen(ssh / "id_ed25519") + "\n")
        self.port = free_port(HOST)
        (ssh / "known_hosts").write_text(f"[{HOST}]:{self.port} {host_key}\n")
        self.user = getpass.getuser()
        config = folder / "sshd_config"
        config.write_text("\n".join([
            f"ListenAddress {HOST}:{self.port}",
            f"HostKey {folder / 'host_ed25519'}",
            f"AuthorizedKeysFile {folder / 'authorized_keys'}",
            f"PidFile {folder / 'sshd.pid'}",
            f"AllowUsers {self.user}",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",  # the temporary folder's owner and modes are not checked
            "LogLevel VERBOSE",
            "",
        ]))
        if os.geteuid() == 0:  # sshd run as root wants its privilege separation folder
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self.log = folder / "sshd.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)],
                                            stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        if not wait_until(lambda: self.process.poll() is not None or self._accepts(), START):
            self.stop()
            raise AssertionError(f"sshd did not listen within {START:.0f} s: {self.said()}")
        if self.process.poll() is not None:
            raise AssertionError(f"sshd did not start: {self.said()}")

    def _accepts(self) -> bool:
        try:
            with socket.create_connection((HOST, self.port), timeout=1):
                return True
        except OSError:
            return False

    def said(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
