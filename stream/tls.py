"""HTTPS for phones on the LAN: browsers allow the camera only on https or localhost."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

DEFAULT_TLS_DIR = Path.home() / ".cache" / "fuscan" / "tls"


def lan_addresses() -> list[str]:
    """This machine's IPv4 addresses other than loopback (best effort, no traffic sent)."""
    found: set[str] = set()
    for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
        found.add(str(info[4][0]))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:  # connect() on UDP only picks a route; nothing is sent
            probe.connect(("192.0.2.1", 9))
            found.add(probe.getsockname()[0])
        except OSError:
            pass
    return sorted(a for a in found if not ipaddress.ip_address(a).is_loopback)


def self_signed_certificate(directory: Path, hosts: list[str]) -> tuple[Path, Path]:
    """Create (once) a self-signed certificate for ``hosts``; returns ``(cert, key)`` paths."""
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fuscan local")])
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    for host in {"127.0.0.1", *hosts}:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=825))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context
