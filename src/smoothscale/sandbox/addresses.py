"""Loopback addresses for the sandbox's pods: each pod gets an IP of its own, as in a real cluster.

Linux routes all of 127.0.0.0/8 to the loopback interface, so every worker can bind the app's metrics port
(`spec.metrics.port`, the same for all pods) on its own address, and the operator scrapes
`http://<status.podIP>:<port><path>` exactly as it would in a cluster. An address is never handed out twice in
a kubelet's life (a recreated pod gets a new IP, as it would), and one whose port is already taken (another
sandbox on the same machine) is skipped.
"""

from __future__ import annotations

import ipaddress
import random
import socket

LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")


class LoopbackAddresses:
    """Hands out `first`, then the following addresses, skipping `.0`, `.255` and busy ones."""

    def __init__(self, first: str = "127.0.0.2") -> None:
        address = ipaddress.IPv4Address(first)
        if address not in LOOPBACK:
            raise ValueError(f"{first} is not a loopback address")
        self._next = int(address)

    def allocate(self, port: int) -> str:
        while True:
            address = ipaddress.IPv4Address(self._next)
            if address not in LOOPBACK:
                raise RuntimeError("the loopback network is exhausted")
            self._next += 1
            if address.packed[-1] in (0, 255):
                continue
            if port_free(str(address), port):
                return str(address)


def port_free(host: str, port: int) -> bool:
    """Could a server bind `host:port` now (with SO_REUSEADDR, as the workers' server does)?"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def random_block() -> str:
    """A random first address in 127.1.0.0 to 127.254.255.0: sandboxes started side by side (parallel test
    runs on one machine) then rarely even probe the same addresses."""
    return f"127.{random.randint(1, 254)}.{random.randint(0, 255)}.1"
