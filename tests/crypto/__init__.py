"""Tests of serde_kit.crypto (keyring, row cipher, EncryptedSerializer, KMS)."""
