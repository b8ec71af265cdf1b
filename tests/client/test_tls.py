"""``wss://`` (``https://`` base URLs) over the blocking connection: TLS checked against the
trusted certificates, and a clear error when the certificate or the handshake is refused.

The server is an official-package app under uvicorn with a certificate made here for
127.0.0.1; ``SSL_CERT_FILE`` makes it trusted (the documented way for a private authority).
The vector env opens the same :class:`~openenv_gym.client.blocking.BlockingConnection`.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_gym import OpenEnvEnv
from openenv_gym.client import ConnectOptions, SyncSession
from openenv_gym.errors import ServerConnectionError
from tests.client.test_keepalive import CountAction, CountEnvironment, CountObservation
from tests.official_peer import serve_official_app

x509 = pytest.importorskip("cryptography.x509")

pytestmark = pytest.mark.timeout(60)


def _self_signed(directory: Path) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    from openenv.core.env_server import create_fastapi_app

    cert, key = _self_signed(tmp_path_factory.mktemp("tls"))
    app = create_fastapi_app(CountEnvironment, CountAction, CountObservation, max_concurrent_envs=8)
    with serve_official_app(app, ssl_certfile=str(cert), ssl_keyfile=str(key)) as url:
        yield url.replace("http://", "https://"), cert


def test_an_env_steps_over_tls(
    tls_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The models are given: the WebSocket is the only traffic that must succeed (httpx's GET
    # calls trust certifi's authorities, not SSL_CERT_FILE, for loopback URLs; the one GET,
    # /web/metadata, asked when no /schema was read, fails on the certificate: a "no").
    url, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    env = OpenEnvEnv(url, action_model=CountAction, observation_model=CountObservation)
    try:
        env.reset(seed=0)
        obs, reward, *_ = env.step(2)
        assert obs["total"] == 2
        assert reward == 1.0
    finally:
        env.close()


def test_an_untrusted_certificate_is_a_clear_connection_error(
    tls_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url, _ = tls_server
    other, _ = _self_signed(tmp_path)  # trusted: a different certificate
    monkeypatch.setenv("SSL_CERT_FILE", str(other))
    with pytest.raises(ServerConnectionError, match=r"TLS certificate .* was refused"):
        OpenEnvEnv(url, action_model=CountAction, observation_model=CountObservation)


def test_wss_to_a_plain_server_is_a_clear_connection_error(cartpole_url: str) -> None:
    with pytest.raises(ServerConnectionError, match=r"TLS handshake .* failed"):
        SyncSession.connect(
            cartpole_url.replace("http://", "https://"), ConnectOptions(connect_timeout=5)
        )
