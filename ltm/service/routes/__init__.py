"""The API's routers, one module per resource; every handler calls the library's public API."""
