"""``--forwarded-allow-ips``: the client behind a listed proxy is the address it appended."""

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from stream.forwarded import forwarded_client, forwarded_middleware, proxy_networks

PROXIES = proxy_networks(["127.0.0.1", "10.0.0.0/8"])


@pytest.mark.parametrize(
    ("remote", "header", "client"),
    [
        ("127.0.0.1", "198.51.100.7", "198.51.100.7"),
        ("10.1.2.3", "6.6.6.6, 198.51.100.7", "198.51.100.7"),  # the proxy's own entry, last
        ("10.1.2.3", "2001:db8::1", "2001:db8::1"),
        ("192.0.2.1", "198.51.100.7", "192.0.2.1"),  # not a listed proxy: header ignored
        ("127.0.0.1", None, "127.0.0.1"),
        ("127.0.0.1", "garbage", "127.0.0.1"),
        (None, "198.51.100.7", "?"),
    ],
)  # fmt: skip
def test_the_client_is_the_last_address_a_listed_proxy_appended(remote, header, client):
    assert forwarded_client(remote, header, PROXIES) == client


def test_a_bad_proxy_network_is_refused():
    with pytest.raises(ValueError):
        proxy_networks(["10.0.0.0/33"])


async def test_handlers_see_the_forwarded_client_as_the_remote():
    async def remote(request: web.Request) -> web.Response:
        return web.Response(text=request.remote or "")

    app = web.Application(middlewares=[forwarded_middleware(PROXIES)])
    app.router.add_get("/", remote)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        response = await client.get("/", headers={"X-Forwarded-For": "198.51.100.7"})
        assert await response.text() == "198.51.100.7"
