#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Writes the seeds of fuzz_jwt into corpus/fuzz_jwt/: byte 0 is the mode (0 a token as presented,
# 1 claims signed RS256, 2 claims signed ES256, 3 a JWKS document), the rest the input.
import base64
import json
import os

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_jwt")
NOW = 1767225600  # 2026-01-01T00:00:00Z, the fuzzer's fixed wall clock


def b64(data):
    return base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")


def write(name, mode, text):
    with open(os.path.join(here, name), "wb") as f:
        f.write(bytes([mode]) + text.encode())


good = {"iss": "https://as.example.com", "aud": "https://mcp.example.com/mcp", "sub": "alice",
        "client_id": "cli", "iat": NOW, "nbf": NOW, "exp": NOW + 3600, "scope": "mcp:read mcp:write",
        "name": "Alice"}
write("claims_rs256.bin", 1, json.dumps(good))
write("claims_es256_aud_array.bin", 2, json.dumps(dict(good, aud=["x", "https://mcp.example.com/mcp"])))
write("claims_client_credentials.bin", 1, json.dumps({k: v for k, v in good.items() if k != "sub"} | {"scp": ["mcp:read"]}))
write("claims_expired.bin", 1, json.dumps(dict(good, exp=NOW - 3600)))
write("claims_wrong_types.bin", 2, json.dumps(dict(good, exp="soon", sub=7)))
payload = b64(json.dumps(good))
write("token_alg_none.bin", 0, b64('{"alg":"none"}') + "." + payload + ".")
write("token_hs256.bin", 0, b64('{"alg":"HS256","kid":"rsa"}') + "." + payload + ".c2lnbmF0dXJl")
write("token_rs256_bad_sig.bin", 0, b64('{"alg":"RS256","kid":"rsa","typ":"at+jwt"}') + "." + payload + ".c2lnbmF0dXJl")
write("token_es256_kid_rsa.bin", 0, b64('{"alg":"ES256","kid":"rsa"}') + "." + payload + ".c2ln")
write("token_two_parts.bin", 0, b64('{"alg":"RS256"}') + "." + payload)
write("token_not_json.bin", 0, b64("not json") + "." + payload + ".c2ln")
write("jwks_rsa_ec.bin", 3, json.dumps({"keys": [
    {"kty": "RSA", "kid": "r", "use": "sig", "alg": "RS256", "e": "AQAB", "n": "u" * 342 + "Q"},
    {"kty": "EC", "kid": "e", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
     "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
    {"kty": "oct", "k": "c2VjcmV0"}]}))
write("jwks_empty.bin", 3, '{"keys":[]}')
write("jwks_not_object.bin", 3, '["keys"]')
