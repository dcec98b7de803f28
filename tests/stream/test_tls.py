import ipaddress
import ssl

from cryptography import x509

from stream.tls import self_signed_certificate, server_context


def test_self_signed_certificate_names_the_lan_addresses_and_is_made_once(tmp_path):
    cert, key = self_signed_certificate(tmp_path, ["192.0.2.7", "scanner.local"])
    loaded = x509.load_pem_x509_certificate(cert.read_bytes())
    names = loaded.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("192.0.2.7") in names.get_values_for_type(x509.IPAddress)
    assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
    assert {"localhost", "scanner.local"} <= set(names.get_values_for_type(x509.DNSName))
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    before = cert.read_bytes()
    assert self_signed_certificate(tmp_path, ["192.0.2.8"]) == (cert, key)
    assert cert.read_bytes() == before
    assert isinstance(server_context(cert, key), ssl.SSLContext)
