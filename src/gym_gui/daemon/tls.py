"""TLS for a daemon that listens beyond this machine: a CA and a server certificate kept in the home.

A daemon bound to loopback speaks plaintext (only this machine reaches it, and every call carries
the token). Bound to any other address it speaks TLS only: :func:`ensure_certificates` makes a
private CA once (``tls/ca.pem``, its key ``tls/ca.key``) and a server certificate signed by it for
the addresses the daemon answers on (``tls/server.pem``, ``tls/server.key``), again whenever those
addresses change. Keys are written mode 0600. Clients and workers trust ``ca.pem`` and nothing
else; the CA certificate is not secret (a worker on another machine is handed it), its key is.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from gym_gui.core.errors import ConfigError
from gym_gui.core.files import write_atomically

# Binds that listen on every address of the machine.
WILDCARDS = frozenset({"0.0.0.0", "::", "[::]"})
_VALID = datetime.timedelta(days=3650)
_SERVER_VALID = datetime.timedelta(days=825)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) reaches only this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, tls: bool | None) -> bool:
    """Whether a daemon listening on ``host`` speaks TLS (``tls`` None: only beyond loopback).

    Raises:
        ConfigError: a bind beyond loopback without TLS.
    """
    if tls is None:
        return not is_loopback(host)
    if not tls and not is_loopback(host):
        raise ConfigError(
            f"refusing to listen on {host} without TLS: it is reachable beyond this machine "
            "(drop --no-tls; clients then trust the CA in the home's tls/ca.pem)"
        )
    return tls


@dataclass(frozen=True)
class TLSFiles:
    """Where a home keeps its daemon's CA and server certificate."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def server_cert(self) -> Path:
        return self.directory / "server.pem"

    @property
    def server_key(self) -> Path:
        return self.directory / "server.key"


def _names(host: str) -> tuple[list[str], list[str]]:
    """The DNS names and IP addresses the server certificate must name to answer on ``host``."""
    dns = {"localhost"}
    ips = {"127.0.0.1", "::1"}
    if host in WILDCARDS:
        # Every address of this machine: a client may reach a wildcard bind on any of them.
        name = socket.gethostname()
        dns.update({name, socket.getfqdn()})
        for info in socket.getaddrinfo(name, None):
            ips.add(str(info[4][0]))
    else:
        try:
            ips.add(str(ipaddress.ip_address(host.strip("[]"))))
        except ValueError:
            dns.add(host)
    return sorted(dns), sorted(ips)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_bytes(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _ca(files: TLSFiles) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    if files.ca_cert.exists() and files.ca_key.exists():
        cert = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
        key = serialization.load_pem_private_key(files.ca_key.read_bytes(), password=None)
        if isinstance(key, ec.EllipticCurvePrivateKey):
            return cert, key
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"gym_gui daemon CA ({socket.gethostname()})")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALID)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    write_atomically(files.ca_key, _key_bytes(key), private=True)
    write_atomically(files.ca_cert, cert.public_bytes(serialization.Encoding.PEM))
    return cert, key


def _covers(cert: x509.Certificate, dns: list[str], ips: list[str], ca: x509.Certificate) -> bool:
    if cert.issuer != ca.subject:
        return False
    if cert.not_valid_after_utc < datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=30):
        return False
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    have_dns = set(names.get_values_for_type(x509.DNSName))
    have_ips = {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
    return set(dns) <= have_dns and set(ips) <= have_ips


def ensure_certificates(directory: Path, host: str) -> TLSFiles:
    """The home's CA (made once) and a server certificate for ``host`` (made again when it does not cover it)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    files = TLSFiles(directory)
    ca_cert, ca_key = _ca(files)
    dns, ips = _names(host)
    if files.server_cert.exists() and files.server_key.exists():
        current = x509.load_pem_x509_certificate(files.server_cert.read_bytes())
        if _covers(current, dns, ips, ca_cert):
            return files
    key = _new_key()
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"gym_gui daemon ({host})")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _SERVER_VALID)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(name) for name in dns]
                + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    write_atomically(files.server_key, _key_bytes(key), private=True)
    write_atomically(files.server_cert, cert.public_bytes(serialization.Encoding.PEM))
    return files
