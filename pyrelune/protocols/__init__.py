"""Sans-I/O codecs, one per host protocol: bytes and values in, bytes out."""
