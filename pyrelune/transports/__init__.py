"""Transports move framed bytes between a host and a codec; they know no cells."""
