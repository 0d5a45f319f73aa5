"""The certificates and keys a private control plane needs, made with `cryptography` (as envtest does).

One throw-away certificate authority signs the API server's serving certificate (for 127.0.0.1 and
localhost) and the client certificates of its users; a user's groups are the certificate's organizations,
so `system:masters` makes an administrator that RBAC never denies. The service-account key pair signs and
checks the tokens of ServiceAccounts (TokenRequest). Every key is ECDSA P-256: quick to make, and accepted
by kube-apiserver for serving, client certificates and service-account tokens alike.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=7)
"""Longer than any run; a control plane's certificates are never reused beyond its folder."""


@dataclass(frozen=True)
class KeyPair:
    """PEM files of a certificate and its private key."""

    certificate: Path
    key: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.write_bytes(pem)
    path.chmod(0o600)
    return path


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    return x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


class CertificateAuthority:
    """A self-signed CA in `folder` (`ca.crt`, `ca.key`) that issues serving and client certificates."""

    def __init__(self, folder: Path, name: str = "smoothscale-control-plane-ca") -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._key = _key()
        now = datetime.datetime.now(datetime.UTC)
        self._name = _name(name)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(self._name)
            .issuer_name(self._name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self.certificate = folder / "ca.crt"
        self.certificate.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))

    def serving(self, name: str, hosts: tuple[str, ...]) -> KeyPair:
        """A server certificate valid for `hosts` (IP addresses or DNS names)."""
        alternatives: list[x509.GeneralName] = []
        for host in hosts:
            try:
                alternatives.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                alternatives.append(x509.DNSName(host))
        return self._issue(name, _name(name), ExtendedKeyUsageOID.SERVER_AUTH, alternatives)

    def client(self, user: str, groups: tuple[str, ...] = ()) -> KeyPair:
        """A client certificate: the API server authenticates it as `user` in `groups`."""
        return self._issue(user, _name(user, groups), ExtendedKeyUsageOID.CLIENT_AUTH, [])

    def _issue(
        self,
        file_name: str,
        subject: x509.Name,
        usage: x509.ObjectIdentifier,
        alternatives: list[x509.GeneralName],
    ) -> KeyPair:
        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if alternatives:
            builder = builder.add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
        certificate = builder.sign(self._key, hashes.SHA256())
        path = self.folder / f"{file_name}.crt"
        path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        return KeyPair(certificate=path, key=_write_key(key, self.folder / f"{file_name}.key"))


def service_account_keys(folder: Path) -> KeyPair:
    """The key pair that signs ServiceAccount tokens (`sa.key`) and verifies them (`sa.pub`, in
    `KeyPair.certificate`: the API server takes a bare public key there)."""
    folder.mkdir(parents=True, exist_ok=True)
    key = _key()
    public = folder / "sa.pub"
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return KeyPair(certificate=public, key=_write_key(key, folder / "sa.key"))
