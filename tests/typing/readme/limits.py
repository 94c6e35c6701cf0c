from serde_kit import Limits, Serializer

serde = Serializer(limits=Limits(max_row_bytes=2 * 2**30, max_regex_length=8192))
