"""The client tests use the service tests' server fixture."""

from tests.service.conftest import server

__all__ = ["server"]
