"""Each pod's own network path to the API server, which a test can cut: a TCP forwarder per pod, listening on
the pod's IP, and a kubeconfig for the pod that points at it.

In a cluster a pod can lose the API server while the rest of the cluster keeps it (a network policy, a
broken node route, a partition between the node and the control plane). The sandbox's pods all share the
machine's loopback, so the path is made explicit: the pod's process reaches the API server only through its
link, and `cut(pod)` makes the link drop everything (open connections stall, new ones are accepted and never
answered, as when packets are dropped) or refuse it (open connections reset, new ones refused); `heal(pod)`
closes whatever was held, so that the client notices and connects again. Bytes pass unchanged: plain HTTP or
TLS, any API server the kubeconfig names.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from enum import Enum
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


class Cut(Enum):
    DROP = "drop"
    """Open connections stall and new ones are accepted but never answered (packets dropped)."""
    REFUSE = "refuse"
    """Open connections are reset and new ones refused (nothing listens)."""


class _Link:
    """One pod's forwarder: accepts on the pod's IP, connects each connection on to the API server."""

    def __init__(self, pod: str, ip: str, upstream: tuple[str, int]) -> None:
        self.pod = pod
        self.ip = ip
        self.upstream = upstream
        self.port = 0
        self.cut: Cut | None = None
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._held: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self._closed = False
        self._listen()

    def _listen(self) -> None:
        listener = socket.create_server((self.ip, self.port))
        self.port = listener.getsockname()[1]
        self._listener = listener
        name = f"api-link-{self.pod}"
        threading.Thread(target=self._accept, args=(listener,), name=name, daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # the listener was closed (a refusing cut, or the end)
            with self._lock:
                if self.cut is not None:
                    self._held.add(client)  # accepted, never answered
                    continue
            try:
                server = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                client.close()  # the API server is down: so is the path through the link
                continue
            server.settimeout(None)
            with self._lock:
                self._sockets |= {client, server}
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                with self._lock:
                    stalled = self.cut is not None
                if stalled:
                    return  # what was in flight is lost, as on a dropped path; heal() closes both ends
                target.sendall(data)
            target.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        finally:
            with self._lock:
                if self.cut is None:
                    for end in (source, target):
                        self._sockets.discard(end)
                        end.close()

    def cut_off(self, how: Cut) -> None:
        with self._lock:
            self.cut = how
            if how is Cut.REFUSE:
                for end in self._sockets:
                    _reset(end)
                self._sockets.clear()
                listener, self._listener = self._listener, None
                if listener is not None:
                    _reset(listener)  # shutdown() wakes the accepting thread; close() alone would not

    def heal(self) -> None:
        with self._lock:
            for end in self._sockets | self._held:
                _reset(end)
            self._sockets.clear()
            self._held.clear()
            self.cut = None
        if self._listener is None and not self._closed:
            self._listen()

    def close(self) -> None:
        self._closed = True
        self.heal()
        listener, self._listener = self._listener, None
        if listener is not None:
            _reset(listener)


def _reset(end: socket.socket) -> None:
    with contextlib.suppress(OSError):
        end.shutdown(socket.SHUT_RDWR)
    end.close()


class ApiLinks:
    """The links of every pod that asked for one (`kubeconfig(pod, ip)`), on the API server `kubeconfig`
    names. A context manager: closes every link on exit."""

    def __init__(self, kubeconfig: Path, root: Path) -> None:
        self.kubeconfig = kubeconfig
        self.root = root
        self._links: dict[str, _Link] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> ApiLinks:
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            links, self._links = list(self._links.values()), {}
        for link in links:
            link.close()

    def kubeconfig_for(self, pod: str, ip: str) -> Path:
        """A kubeconfig for the pod, its server the pod's link (started on first use, kept across restarts of
        the pod's container; a new pod of the same name on another IP gets a new link)."""
        config = json.loads(self.kubeconfig.read_text())
        context = next(c for c in config["contexts"] if c["name"] == config["current-context"])["context"]
        cluster = next(c for c in config["clusters"] if c["name"] == context["cluster"])["cluster"]
        server = urlsplit(cluster["server"])
        default_port = 443 if server.scheme == "https" else 80
        with self._lock:
            link = self._links.get(pod)
            if link is None or link.ip != ip:
                if link is not None:
                    link.close()
                link = _Link(pod, ip, (server.hostname or "127.0.0.1", server.port or default_port))
                self._links[pod] = link
        cluster["server"] = urlunsplit(server._replace(netloc=f"{ip}:{link.port}"))
        path = self.root / f"{pod}.kubeconfig"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(config, indent=2))
        tmp.replace(path)
        return path

    def cut(self, pod: str, how: Cut = Cut.DROP) -> None:
        """The pod loses the API server until `heal(pod)`."""
        self._link(pod).cut_off(how)

    def heal(self, pod: str) -> None:
        self._link(pod).heal()

    def _link(self, pod: str) -> _Link:
        with self._lock:
            if pod not in self._links:
                raise KeyError(f"pod {pod} has no API link: it never started with one")
            return self._links[pod]
