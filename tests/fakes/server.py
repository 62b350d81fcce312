"""Serving a fake's aiohttp app on 127.0.0.1 at a random port: in the test's event loop, or in a
thread of its own for code under test that runs its own loop (``confer index``)."""

import asyncio
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from aiohttp import web


async def serve_locally(
    app: web.Application, *, ssl_context: "ssl.SSLContext | None" = None
) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    assert site._server is not None
    port: int = site._server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
    return runner, port


@contextmanager
def serve_in_thread(app: web.Application, *, ssl_context: "ssl.SSLContext | None" = None) -> Iterator[str]:
    """``app`` served from a thread with its own event loop until the ``with`` ends; yields its
    base address (``http://127.0.0.1:PORT``, or https with ``ssl_context``)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    serving = serve_locally(app, ssl_context=ssl_context)
    runner, port = asyncio.run_coroutine_threadsafe(serving, loop).result(timeout=30)
    try:
        yield f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()


def self_signed(folder: Path) -> tuple[ssl.SSLContext, Path]:
    """A TLS server context for 127.0.0.1 with a certificate made now, and the certificate's file
    for clients to trust (``REQUESTS_CA_BUNDLE``): for libraries that only speak HTTPS (MSAL)."""
    import datetime

    from cryptography import x509
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
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context, cert_file
