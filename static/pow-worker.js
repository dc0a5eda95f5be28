// The join challenge's proof of work, off the page's main thread: count nonces 0, 1, 2, …
// until SHA-256 of the ASCII string `challenge:nonce` starts with `bits` zero bits.
//
// In: { challenge, bits }. Out: { hashes } now and then (progress), then { nonce, hashes }.
// SHA-256 is written out here (FIPS 180-4) rather than taken from crypto.subtle: subtle is
// missing on plain-http pages, and one promise per hash would be ten times slower.
'use strict';

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const W = new Uint32Array(64);
const H = new Uint32Array(8);

// The first 32 bits of SHA-256(bytes[0..len]); `bytes` has room for the padding.
function sha256First32(bytes, len) {
  const blocks = ((len + 8) >> 6) + 1;
  bytes.fill(0, len, blocks * 64);
  bytes[len] = 0x80;
  const bits = len * 8;
  const end = blocks * 64;
  bytes[end - 4] = bits >>> 24; bytes[end - 3] = bits >>> 16; bytes[end - 2] = bits >>> 8; bytes[end - 1] = bits;
  H.set([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  for (let b = 0; b < blocks; b++) {
    const o = b * 64;
    for (let i = 0; i < 16; i++) {
      const j = o + i * 4;
      W[i] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const w15 = W[i - 15], w2 = W[i - 2];
      const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
      const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
      W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
    }
    let a = H[0], bb = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & bb) ^ (a & c) ^ (bb & c))) | 0;
      h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = bb; bb = a; a = (t1 + t2) | 0;
    }
    H[0] += a; H[1] += bb; H[2] += c; H[3] += d; H[4] += e; H[5] += f; H[6] += g; H[7] += h;
  }
  return H[0];
}

// Leading zero bits of SHA-256 beyond the first 32 are never asked (the server caps at 32).
function enough(first32, bits) {
  return bits === 0 || (bits >= 32 ? first32 === 0 : (first32 >>> (32 - bits)) === 0);
}

self.onmessage = (event) => {
  const { challenge, bits } = event.data;
  const prefix = new TextEncoder().encode(`${challenge}:`);
  const bytes = new Uint8Array(prefix.length + 32 + 72);
  bytes.set(prefix);
  for (let nonce = 0; ; nonce++) {
    const digits = String(nonce);
    let len = prefix.length;
    for (let i = 0; i < digits.length; i++) bytes[len++] = digits.charCodeAt(i);
    if (enough(sha256First32(bytes, len), bits)) {
      self.postMessage({ nonce: digits, hashes: nonce + 1 });
      return;
    }
    if ((nonce & 0xffff) === 0xffff) self.postMessage({ hashes: nonce + 1 });
  }
};
