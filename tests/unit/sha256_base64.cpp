// SPDX-License-Identifier: Apache-2.0
// Tests of SHA-256, HMAC-SHA-256, the constant-time comparison and strict RFC 4648 base64
// (detail/sha256.hpp, detail/base64.hpp): the pieces of the signed request state
// (docs/eras.md#request-state: base64url payload, HMAC-SHA-256 MAC) and of the `=?base64?...?=`
// form of Mcp-Name (docs/eras.md#headers: canonical base64 only). Vectors: FIPS 180-4 / NIST
// (SHA-256), RFC 4231 (HMAC-SHA-256), RFC 4648 section 10 (base64); the block-boundary digests
// were computed with coreutils sha256sum.
#include <mcpcore/detail/base64.hpp>
#include <mcpcore/detail/sha256.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

using namespace mcpcore;
using namespace mcpcore::detail;

namespace {

std::string hex(const sha256_digest& d) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (const std::uint8_t b : d) {
    out += digits[b >> 4U];
    out += digits[b & 15U];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) { return hex(sha256{}.update(bytes).finish()); }

std::string hmac_hex(std::string_view key, std::string_view message) { return hex(hmac_sha256(key, message)); }

std::string encode(std::string_view bytes, base64_alphabet a) {
  std::string out;
  base64_encode(out, bytes, a);
  return out;
}

/// `n` pseudo-random bytes (a fixed LCG, so failures reproduce).
std::string noise(std::size_t n, std::uint32_t seed) {
  std::string out;
  out.reserve(n);
  std::uint32_t x = seed;
  for (std::size_t i = 0; i < n; ++i) {
    x = x * 1664525U + 1013904223U;
    out += static_cast<char>(x >> 24U);
  }
  return out;
}

constexpr std::string_view alphabet_standard = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view alphabet_url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// 67 printable characters, repeated: the messages of the block-boundary digests below are
// prefixes of this text (printf '%s' "${P}${P}${P}" | head -c N | sha256sum).
constexpr std::string_view boundary_pattern =
    "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ!@#$%"
    "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ!@#$%"
    "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ!@#$%";

struct boundary_vector {
  std::size_t length;
  std::string_view digest;
};

// 55: the padding and the length fit the block; 56..63: they do not (a second block);
// 64, 65: a full block and one byte more; 119..129: the same edges one block later.
constexpr boundary_vector boundary_vectors[] = {
    {55, "dd00794e0454db49259b6c426331d5e0cdf642fc0d7353fb85ee89519aafd995"},
    {56, "ecbe4cc6c393d5e47e875e1a1ce7489d4e6d420bc3ec3312f9df475278d77f69"},
    {63, "378332f3c0c81cf423d5fa24247c17083bf32533fcff624b4c3ab4426db7c409"},
    {64, "8bd8b71acf927db5f94100ae137bfb5769ee57d60b95dbbab294173ef073c01a"},
    {65, "b780d798616b8ef8fe461f3440a80e3f7990166b097df34a4701bb3246fd3827"},
    {119, "ecc7f53a0e29fe76746cbb375a7226be326b83660b9e9f1149c5f0eab06bd064"},
    {120, "76fa6037ad1f2cb9f65898cf5ffb7d815fd31f67eb3bb79045160b4b9b58a614"},
    {127, "a24fdc5def342c923f1e4c86db955999faa7635a2a24b2f1c10eedb7d2e50bb6"},
    {128, "7508ca6b46c89ee7cabdd96edcd5ac60ac63ccc26be282b6f5f7d0b38c09f402"},
    {129, "766d73c70ccda2da1be3ee28391f3d723d4d74abb3e3012de472834a56c13af9"},
};

}  // namespace

TEST_SUITE("sha256") {
  TEST_CASE("eras.md/request-state: sha256 digests the FIPS 180-4 short messages") {
    CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                     "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu") ==
          "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  }

  TEST_CASE("eras.md/request-state: sha256 of one million a in one piece and in uneven chunks") {
    constexpr std::string_view expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    const std::string million(1000000, 'a');
    CHECK(sha256_hex(million) == expected);

    constexpr std::size_t chunk_sizes[] = {1, 3, 55, 64, 9, 128, 63, 1000, 65, 0, 4096, 56, 7};
    sha256 h;
    std::size_t at = 0;
    std::size_t i = 0;
    while (at < million.size()) {
      const std::size_t n = std::min(chunk_sizes[i++ % std::size(chunk_sizes)], million.size() - at);
      h.update(std::string_view{million}.substr(at, n));
      at += n;
    }
    CHECK(hex(h.finish()) == expected);
  }

  TEST_CASE("eras.md/request-state: sha256 across the padding and block boundaries however the bytes are fed") {
    for (const auto& v : boundary_vectors) {
      CAPTURE(v.length);
      const std::string_view msg = boundary_pattern.substr(0, v.length);
      REQUIRE(msg.size() == v.length);
      CHECK(sha256_hex(msg) == v.digest);

      // Byte by byte.
      sha256 bytewise;
      for (const char c : msg) bytewise.update(std::string_view{&c, 1});
      CHECK(hex(bytewise.finish()) == v.digest);

      // Split in two at every point, with an empty update in between.
      std::size_t wrong_splits = 0;
      for (std::size_t k = 0; k <= msg.size(); ++k) {
        if (hex(sha256{}.update(msg.substr(0, k)).update("").update(msg.substr(k)).finish()) != v.digest) {
          ++wrong_splits;
        }
      }
      CHECK(wrong_splits == 0);
    }
  }

  TEST_CASE("eras.md/request-state: sha256 digests differ when one bit of the message differs") {
    std::string msg{boundary_pattern.substr(0, 64)};
    const std::string base = sha256_hex(msg);
    msg[63] = static_cast<char>(msg[63] ^ 1);
    CHECK(sha256_hex(msg) != base);
    // Bytes above 0x7f are hashed as unsigned octets: sha256sum of the single byte 0xff.
    CHECK(sha256_hex("\xff") == "a8100ae6aa1940d0b663bb31cd466142ebbdbd5187131b92d93818987832eb89");
  }

  TEST_CASE("eras.md/request-state: hmac_sha256 matches RFC 4231 test cases 1 to 4") {
    // Test case 1
    CHECK(hmac_hex(std::string(20, '\x0b'), "Hi There") ==
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    // Test case 2: a key shorter than the output
    CHECK(hmac_hex("Jefe", "what do ya want for nothing?") ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    // Test case 3: 50 bytes of 0xdd
    CHECK(hmac_hex(std::string(20, '\xaa'), std::string(50, '\xdd')) ==
          "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    // Test case 4: key 0x01..0x19, 50 bytes of 0xcd
    std::string key4;
    for (int i = 1; i <= 25; ++i) key4 += static_cast<char>(i);
    CHECK(hmac_hex(key4, std::string(50, '\xcd')) ==
          "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  }

  TEST_CASE("eras.md/request-state: hmac_sha256 matches RFC 4231 test case 5 truncated to 128 bits") {
    const sha256_digest d = hmac_sha256(std::string(20, '\x0c'), "Test With Truncation");
    CHECK(hex(d).substr(0, 32) == "a3b6167473100ee06e0c796c2955552b");
  }

  TEST_CASE("eras.md/request-state: hmac_sha256 hashes keys longer than the block (RFC 4231 cases 6 and 7)") {
    const std::string key(131, '\xaa');
    CHECK(hmac_hex(key, "Test Using Larger Than Block-Size Key - Hash Key First") ==
          "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    CHECK(hmac_hex(key,
                   "This is a test using a larger than block-size key and a larger than block-size data. "
                   "The key needs to be hashed before being used by the HMAC algorithm.") ==
          "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
    // RFC 2104: a key longer than the block is replaced by its digest.
    const sha256_digest kd = sha256{}.update(key).finish();
    const std::string hashed_key{reinterpret_cast<const char*>(kd.data()), kd.size()};  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
    CHECK(hmac_hex(hashed_key, "Test Using Larger Than Block-Size Key - Hash Key First") ==
          "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  }

  TEST_CASE("eras.md/request-state: hmac_sha256 depends on every byte of the key and the message") {
    const std::string base = hmac_hex("key-0123456789abcdef0123456789abcdef", "v1.payload");
    CHECK(hmac_hex("key-0123456789abcdef0123456789abcdeF", "v1.payload") != base);
    CHECK(hmac_hex("key-0123456789abcdef0123456789abcdef", "v1.payloaD") != base);
    CHECK(hmac_hex("key-0123456789abcdef0123456789abcdef", "v1.payload") == base);
    // A 64-byte key (exactly the block) is used as is, not hashed.
    const std::string key64(64, 'k');
    const sha256_digest k64d = sha256{}.update(key64).finish();
    CHECK(hmac_hex(key64, "m") !=
          hmac_hex(std::string_view{reinterpret_cast<const char*>(k64d.data()), k64d.size()}, "m"));  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  }

  TEST_CASE("eras.md/request-state: sha256.hpp constant_time_equals compares bytes and lengths") {
    CHECK(constant_time_equals("", ""));
    CHECK(constant_time_equals("abc", "abc"));
    CHECK(constant_time_equals(std::string_view{"a\0b", 3}, std::string_view{"a\0b", 3}));
    CHECK_FALSE(constant_time_equals("abc", "abd"));
    CHECK_FALSE(constant_time_equals("abc", "Abc"));
    CHECK_FALSE(constant_time_equals("\x80", "\x00"));
    CHECK_FALSE(constant_time_equals("\xff", "\x7f"));
    CHECK_FALSE(constant_time_equals(std::string_view{"a\0b", 3}, std::string_view{"a\0c", 3}));
    // Different lengths, including a prefix and the empty string.
    CHECK_FALSE(constant_time_equals("abc", "ab"));
    CHECK_FALSE(constant_time_equals("ab", "abc"));
    CHECK_FALSE(constant_time_equals("", "a"));
    CHECK_FALSE(constant_time_equals(std::string_view{"abc\0", 4}, "abc"));
  }
}

TEST_SUITE("base64") {
  TEST_CASE("eras.md/headers: base64 standard alphabet encodes the RFC 4648 section 10 vectors padded") {
    CHECK(encode("", base64_alphabet::standard) == "");
    CHECK(encode("f", base64_alphabet::standard) == "Zg==");
    CHECK(encode("fo", base64_alphabet::standard) == "Zm8=");
    CHECK(encode("foo", base64_alphabet::standard) == "Zm9v");
    CHECK(encode("foob", base64_alphabet::standard) == "Zm9vYg==");
    CHECK(encode("fooba", base64_alphabet::standard) == "Zm9vYmE=");
    CHECK(encode("foobar", base64_alphabet::standard) == "Zm9vYmFy");
  }

  TEST_CASE("eras.md/request-state: base64 url alphabet encodes the RFC 4648 section 10 vectors unpadded") {
    CHECK(encode("", base64_alphabet::url) == "");
    CHECK(encode("f", base64_alphabet::url) == "Zg");
    CHECK(encode("fo", base64_alphabet::url) == "Zm8");
    CHECK(encode("foo", base64_alphabet::url) == "Zm9v");
    CHECK(encode("foob", base64_alphabet::url) == "Zm9vYg");
    CHECK(encode("fooba", base64_alphabet::url) == "Zm9vYmE");
    CHECK(encode("foobar", base64_alphabet::url) == "Zm9vYmFy");
  }

  TEST_CASE("eras.md/headers: base64 decodes the RFC 4648 section 10 vectors in both alphabets") {
    const std::pair<std::string_view, std::string_view> vectors[] = {
        {"", ""}, {"f", "Zg"}, {"fo", "Zm8"}, {"foo", "Zm9v"}, {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"}};
    for (const auto& [plain, url] : vectors) {
      CAPTURE(plain);
      const std::optional<std::string> from_url = base64_decode(url, base64_alphabet::url);
      REQUIRE(from_url.has_value());
      CHECK(*from_url == plain);
      const std::string padded = encode(plain, base64_alphabet::standard);
      const std::optional<std::string> from_standard = base64_decode(padded, base64_alphabet::standard);
      REQUIRE(from_standard.has_value());
      CHECK(*from_standard == plain);
    }
    CHECK(base64_decode("Zm9vYg==", base64_alphabet::standard) == std::optional<std::string>{"foob"});
    CHECK(base64_decode("Zm9vYmE=", base64_alphabet::standard) == std::optional<std::string>{"fooba"});
  }

  TEST_CASE("eras.md/headers: base64 alphabets differ only in characters 62 and 63") {
    // 0xfb 0xff 0xbf = 111110 111111 111110 111111: characters 62, 63, 62, 63.
    CHECK(encode("\xfb\xff\xbf", base64_alphabet::standard) == "+/+/");
    CHECK(encode("\xfb\xff\xbf", base64_alphabet::url) == "-_-_");
    CHECK(encode("\xfb\xff", base64_alphabet::standard) == "+/8=");
    CHECK(encode("\xfb\xff", base64_alphabet::url) == "-_8");
    CHECK(base64_decode("+/+/", base64_alphabet::standard) == std::optional<std::string>{"\xfb\xff\xbf"});
    CHECK(base64_decode("-_-_", base64_alphabet::url) == std::optional<std::string>{"\xfb\xff\xbf"});
    // The 64 characters, in order.
    std::string all_sextets;  // 48 bytes whose sextets are 0, 1, ..., 63
    for (unsigned i = 0; i < 64; i += 4) {
      const std::uint32_t v = (i << 18U) | ((i + 1) << 12U) | ((i + 2) << 6U) | (i + 3);
      all_sextets += static_cast<char>(v >> 16U);
      all_sextets += static_cast<char>((v >> 8U) & 0xffU);
      all_sextets += static_cast<char>(v & 0xffU);
    }
    CHECK(encode(all_sextets, base64_alphabet::standard) == alphabet_standard);
    CHECK(encode(all_sextets, base64_alphabet::url) == alphabet_url);
  }

  TEST_CASE("eras.md/request-state: base64_encode appends to what is already there") {
    std::string out = "v1.";
    base64_encode(out, "foob", base64_alphabet::url);
    CHECK(out == "v1.Zm9vYg");
    base64_encode(out, "f", base64_alphabet::standard);
    CHECK(out == "v1.Zm9vYgZg==");
  }

  TEST_CASE("eras.md/request-state: base64 round-trips every byte value and pseudo-random binary in both alphabets") {
    std::string all_bytes;
    for (int i = 0; i < 256; ++i) all_bytes += static_cast<char>(i);
    for (const auto a : {base64_alphabet::standard, base64_alphabet::url}) {
      CAPTURE(static_cast<int>(a));
      CHECK(base64_decode(encode(all_bytes, a), a) == std::optional<std::string>{all_bytes});

      std::size_t wrong = 0;
      for (int i = 0; i < 256; ++i) {
        const std::string one(1, static_cast<char>(i));
        if (base64_decode(encode(one, a), a) != std::optional<std::string>{one}) ++wrong;
      }
      CHECK(wrong == 0);

      std::size_t wrong_length = 0;
      std::size_t wrong_trip = 0;
      for (std::size_t n = 0; n <= 200; ++n) {
        const std::string bytes = noise(n, static_cast<std::uint32_t>(n) * 7919U + 1U);
        const std::string text = encode(bytes, a);
        const std::size_t expected_length = a == base64_alphabet::standard ? (n + 2) / 3 * 4 : (n * 4 + 2) / 3;
        if (text.size() != expected_length) ++wrong_length;
        if (base64_decode(text, a) != std::optional<std::string>{bytes}) ++wrong_trip;
      }
      CHECK(wrong_length == 0);
      CHECK(wrong_trip == 0);
    }
  }

  TEST_CASE("eras.md/headers: base64 accepts exactly the canonical short texts (one value has one text)") {
    // Every 2- and 3-character tail: accepted exactly when the unused low bits are zero, and
    // then the bytes encode back to the same text.
    for (const auto a : {base64_alphabet::standard, base64_alphabet::url}) {
      CAPTURE(static_cast<int>(a));
      const std::string_view chars = a == base64_alphabet::standard ? alphabet_standard : alphabet_url;
      const std::string_view pad1 = a == base64_alphabet::standard ? "=" : "";
      const std::string_view pad2 = a == base64_alphabet::standard ? "==" : "";
      std::size_t accepted2 = 0, accepted3 = 0, wrong = 0;
      for (std::size_t i = 0; i < 64; ++i) {
        for (std::size_t j = 0; j < 64; ++j) {
          const std::string two = std::string{chars[i], chars[j]} + std::string{pad2};
          const auto d2 = base64_decode(two, a);
          if (d2.has_value() != ((j & 15U) == 0)) ++wrong;
          if (d2) {
            ++accepted2;
            if (d2->size() != 1 || encode(*d2, a) != two) ++wrong;
          }
          for (std::size_t k = 0; k < 64; ++k) {
            const std::string three = std::string{chars[i], chars[j], chars[k]} + std::string{pad1};
            const auto d3 = base64_decode(three, a);
            if (d3.has_value() != ((k & 3U) == 0)) ++wrong;
            if (d3) {
              ++accepted3;
              if (d3->size() != 2 || encode(*d3, a) != three) ++wrong;
            }
          }
        }
      }
      CHECK(wrong == 0);
      CHECK(accepted2 == 256);    // every byte value, once
      CHECK(accepted3 == 65536);  // every pair of bytes, once
    }
  }

  TEST_CASE("eras.md/headers: base64 standard decoding refuses wrong lengths and foreign characters and bad padding") {
    const std::string_view refused[] = {
        // wrong length (padding is required)
        "Z", "Zg", "Zg=", "Zm8", "Zm9vY", "Zm9vYg", "Zm9vYg=", "Zm8==",
        // characters of the url alphabet
        "-_8=", "Zm9v-_-_", "Zm9vYg_=",
        // other characters: whitespace, NUL, non-ASCII, '.'
        "Zm9 ", " Zm9", "Zm9v\nZg=", "Zm.v", "\xffm9v",
        // padding in the middle, or more than two
        "Zg==Zm9v", "Zm=v", "=Zm9", "Z===", "====", "Zm9v====", "Zm9vZ===", "Zg=A",
        // non-canonical trailing bits
        "Zh==", "Zm9=", "Zm9vYh==", "Zm9vYmF=", "//==",
    };
    for (const std::string_view text : refused) {
      CAPTURE(text);
      CHECK_FALSE(base64_decode(text, base64_alphabet::standard).has_value());
    }
    CHECK_FALSE(base64_decode(std::string_view{"Zm9\0", 4}, base64_alphabet::standard).has_value());
    // The canonical neighbours of the refused texts are accepted.
    CHECK(base64_decode("Zg==", base64_alphabet::standard) == std::optional<std::string>{"f"});
    CHECK(base64_decode("Zm8=", base64_alphabet::standard) == std::optional<std::string>{"fo"});
    CHECK(base64_decode("/w==", base64_alphabet::standard) == std::optional<std::string>{"\xff"});
  }

  TEST_CASE("eras.md/request-state: base64 url decoding refuses padding and foreign characters and length 1 mod 4 and bad trailing bits") {
    const std::string_view refused[] = {
        // any '=' at all
        "Zg==", "Zm8=", "Zg=", "=", "Zm9vZ=", "Zm9vYg==",
        // characters of the standard alphabet
        "+/8", "Zm9v+/+/", "Zm9vYg/",
        // other characters
        "Zm9 ", "Zm.v", "\xffm9v", "Zm\n9",
        // length 1 mod 4
        "Z", "Zm9vY", "Zm9vYmFyZ", "AAAAA",
        // non-canonical trailing bits
        "Zh", "Zm9", "Zm9vYh", "Zm9vYmF", "__",
    };
    for (const std::string_view text : refused) {
      CAPTURE(text);
      CHECK_FALSE(base64_decode(text, base64_alphabet::url).has_value());
    }
    CHECK(base64_decode("", base64_alphabet::url) == std::optional<std::string>{""});
    CHECK(base64_decode("Zg", base64_alphabet::url) == std::optional<std::string>{"f"});
    CHECK(base64_decode("_w", base64_alphabet::url) == std::optional<std::string>{"\xff"});
    CHECK(base64_decode("AAAA", base64_alphabet::url) == std::optional<std::string>{std::string(3, '\0')});
  }
}
