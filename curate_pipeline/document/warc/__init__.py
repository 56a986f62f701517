"""Reading archives: byte streams (local, HTTP, object stores), WARC and ARC framing, records,
byte-range splits, and decoding payloads to text."""
