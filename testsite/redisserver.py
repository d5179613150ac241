"""A real ``redis-server`` on a loopback port, started and stopped by the tests.

Debian's ``redis-server`` package provides the binary; when it is missing
and ``apt-get`` can run (CI runs as root), it is installed once.  The server
runs in a temporary folder with the append-only file on (``appendfsync
always`` for the tests: what a test is told is written is on disk), on ``127.0.0.1`` and a
free port, without persistence snapshots; :meth:`RedisServer.restart` kills
it with SIGKILL and starts it again on the same port and folder, which is
what the "Redis restarted loses nothing acknowledged" tests need.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import redis


def _free_port(highest: int = 65535) -> int:
    """A free loopback port, at most *highest* (a few tries: the kernel picks)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port <= highest:
            return port
    raise RuntimeError(f"no free loopback port at most {highest} in 200 tries")


def redis_server_binary() -> str:
    """The path of ``redis-server``, installing Debian's package if it is missing."""
    found = shutil.which("redis-server")
    if found:
        return found
    if shutil.which("apt-get") and os.geteuid() == 0:
        install = ["apt-get", "install", "-y", "-q", "redis-server"]
        # a fresh machine may have no package lists yet: update once, then retry
        for step in (install, ["apt-get", "update", "-q"], install):
            subprocess.run(step, check=False, capture_output=True, timeout=600)
            found = shutil.which("redis-server")
            if found:
                return found
    raise RuntimeError("redis-server is not installed: apt-get install redis-server (the Redis store tests need it)")


def make_certificates(folder: Path) -> None:
    """A throwaway CA and, signed by it, a certificate for 127.0.0.1 and one for a client (openssl)."""

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True, timeout=60)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=scrapy-adaptive test CA")  # fmt: skip
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name in ("server", "client"):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", "/CN=127.0.0.1")  # fmt: skip
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "2", "-extfile", "san.ext")  # fmt: skip


class RedisServer:
    """One redis-server process; ``url`` is its ``redis://127.0.0.1:<port>/0``."""

    def __init__(self, folder: Path, *, password: str | None = None, fsync: str = "always", tls: bool = False) -> None:
        self.folder = folder
        self.fsync = fsync
        #: TLS only, client certificates required: certificates made by :func:`make_certificates`
        self.tls = tls
        self.port = _free_port()
        self.password = password
        self.proc: subprocess.Popen[bytes] | None = None
        #: more redis-server arguments (a cluster node's)
        self.extra: list[str] = []
        #: started once: a restart keeps the port its clients know
        self.started = False

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"{'rediss' if self.tls else 'redis'}://{auth}127.0.0.1:{self.port}/0"

    def client(self, **options: float) -> redis.Redis:
        if self.tls:
            return redis.Redis.from_url(self.url, **self.tls_client_options(), **options)
        return redis.Redis.from_url(self.url, **options)

    def tls_client_options(self) -> dict[str, str]:
        return {
            "ssl_ca_certs": str(self.folder / "ca.crt"),
            "ssl_certfile": str(self.folder / "client.crt"),
            "ssl_keyfile": str(self.folder / "client.key"),
        }

    def start(self) -> RedisServer:
        args = [
            redis_server_binary(),
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.folder),
            "--appendonly", "yes",
            "--appendfsync", self.fsync,
            "--save", "",
            "--daemonize", "no",
            "--protected-mode", "yes",
            "--logfile", str(self.folder / "redis.log"),
        ]  # fmt: skip
        args += self.extra
        if self.password:
            args += ["--requirepass", self.password]
        if self.tls:
            if not (self.folder / "server.crt").exists():
                make_certificates(self.folder)
            i = args.index("--port")
            args[i : i + 2] = ["--port", "0", "--tls-port", str(self.port)]
            args += [
                "--tls-cert-file", str(self.folder / "server.crt"),
                "--tls-key-file", str(self.folder / "server.key"),
                "--tls-ca-cert-file", str(self.folder / "ca.crt"),
                "--tls-auth-clients", "yes",
            ]  # fmt: skip
        for attempt in range(3):
            if self._launch(args):
                self.started = True
                return self
            if self.started or self.extra or attempt == 2:
                break
            # a port picked free was taken before redis-server bound it (by
            # another test worker's server, or a connection's local end): a
            # first start may move to another free one; a restart keeps its port
            port = _free_port()
            args[args.index(str(self.port))] = str(port)
            self.port = port
        raise RuntimeError(f"redis-server did not start on port {self.port} (see {self.folder / 'redis.log'})")

    def _launch(self, args: list[str]) -> bool:
        """Start redis-server with *args*; True once it answers on this port
        (itself, not another process's server there), False if it did not."""
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            client = self.client(socket_timeout=2)
            try:
                if client.ping() and int(client.info("server")["process_id"]) == self.proc.pid:
                    return True
                if self.proc.poll() is not None:
                    break  # another server answers there, ours exited: its log says why
                time.sleep(0.05)
            except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError, redis.ResponseError):
                # not up yet, or what answers there is not a redis-server
                if self.proc.poll() is not None:
                    break  # it exited: its log says why
                time.sleep(0.05)
            except redis.AuthenticationError:
                return True
            finally:
                client.close()
        self.stop()
        return False

    def kill(self) -> None:
        """SIGKILL: no shutdown save, only what the AOF holds survives."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None

    def restart(self) -> None:
        self.kill()
        self.start()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _cluster_ok(client: redis.Redis) -> bool:
    try:
        return b"cluster_state:ok" in client.execute_command("CLUSTER", "INFO")
    finally:
        client.close()


class RedisClusterServers:
    """A real Redis Cluster on loopback: *nodes* primaries, no replicas.

    Each node is a :class:`RedisServer` (its own folder and free port, AOF
    on) started with ``--cluster-enabled yes``; ``redis-cli --cluster
    create`` then spreads the 16,384 hash slots over them.  ``url`` is
    ``redis+cluster://`` and the first node's address, as a crawl names it.
    """

    def __init__(self, folder: Path, *, nodes: int = 3) -> None:
        self.servers: list[RedisServer] = []
        for i in range(nodes):
            (folder / f"node{i}").mkdir(parents=True, exist_ok=True)
            server = RedisServer(folder / f"node{i}")
            # the cluster bus port defaults to the port + 10,000: name both
            server.port = _free_port(55535)
            server.extra = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                            "--cluster-node-timeout", "5000", "--cluster-port", str(_free_port())]  # fmt: skip
            self.servers.append(server)

    @property
    def url(self) -> str:
        return f"redis+cluster://127.0.0.1:{self.servers[0].port}"

    def client(self) -> redis.RedisCluster:
        return redis.RedisCluster(host="127.0.0.1", port=self.servers[0].port)

    def start(self) -> RedisClusterServers:
        try:
            for server in self.servers:
                server.start()
            cli = shutil.which("redis-cli") or str(Path(redis_server_binary()).with_name("redis-cli"))
            addresses = [f"127.0.0.1:{s.port}" for s in self.servers]
            subprocess.run(
                [cli, "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"],
                check=True, capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            # every node must agree the cluster is up (slots known everywhere)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                if all(_cluster_ok(s.client()) for s in self.servers):
                    return self
                time.sleep(0.1)
            raise RuntimeError(f"the Redis Cluster on {addresses} did not come up within 20 s")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def __enter__(self) -> RedisClusterServers:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
