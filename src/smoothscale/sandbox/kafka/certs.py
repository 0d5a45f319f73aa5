"""A throwaway certificate authority and a server certificate for 127.0.0.1, for the sandbox's TLS listener.

Made with `cryptography` at start-up (an EC key signs in microseconds), valid for a day, never written
anywhere but the broker's properties: a test's clients trust `ca_pem` and verify the broker's address
against the certificate's IP subject alternative name, as a production client verifies its brokers.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class ServerCertificate:
    """PEM text: the CA clients trust, and the broker's certificate chain and private key (PKCS#8)."""

    ca_pem: str
    chain_pem: str
    key_pem: str


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def server_certificate(
    address: str = "127.0.0.1", ca_name: str = "smoothscale sandbox CA"
) -> ServerCertificate:
    """A new CA, and a certificate it signed for `address` (an IP address)."""
    now = datetime.datetime.now(datetime.UTC)
    valid = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1))
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(ca_name))
        .issuer_name(_name(ca_name))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name(address))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return ServerCertificate(
        ca_pem=ca.public_bytes(pem).decode(),
        chain_pem=leaf.public_bytes(pem).decode() + ca.public_bytes(pem).decode(),
        key_pem=key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode(),
    )
