"""The kernels' event loop and its one timer: what the evented driver, the transports and
the codecs' coalesced output run on (asyncio's loop stands in for it over WebSocket)."""
