// Verifies a waiting-room admission pass with WebCrypto alone, as a CDN worker (Cloudflare
// Workers, Deno Deploy, Fastly Compute's JS) or Node >= 20 runs it: the pass is a JWT signed
// with EdDSA (Ed25519), the keys are the waiting room's GET /.well-known/jwks.json.
//
//   import { verifyPass } from './verify-pass.mjs';
//   const jwks = await (await fetch('https://tickets.example/.well-known/jwks.json')).json();
//   const admission = await verifyPass(pass, jwks, 'show-42');   // throws when refused
//
// What it proves: the waiting room admitted this ticket for this show, and the admission has
// not run out. Not that it is unspent: the checkout spends it once with
// POST /orders/waiting-room/{showId}/redeem (or the edge asks GET …/pass on every request).
// Cache the JWKS for at most its Cache-Control max-age (a new key is published that long
// before it signs); on an unknown `kid`, fetch it again once.

const decoder = new TextDecoder();

function base64url(text) {
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/');
  const bin = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

function json(part) {
  return JSON.parse(decoder.decode(base64url(part)));
}

/**
 * The admission `pass` proves, or an Error saying why it is refused.
 * @param {string} pass the JWT (X-Admission-Ticket, or the wr_pass cookie)
 * @param {{keys: object[]}} jwks the waiting room's key set
 * @param {string} show the show whose admission is needed
 * @param {number} [now] Unix seconds
 * @returns {Promise<{ticket: string, show: string, expiresAt: number, epoch: number}>}
 */
export async function verifyPass(pass, jwks, show, now = Math.floor(Date.now() / 1000)) {
  const parts = String(pass).split('.');
  if (parts.length !== 3) throw new Error('malformed pass');
  let header, claims;
  try {
    header = json(parts[0]);
    claims = json(parts[1]);
  } catch {
    throw new Error('malformed pass');
  }
  // Only the algorithm the waiting room signs with: never "none", never HMAC.
  if (header.alg !== 'EdDSA') throw new Error('unexpected algorithm');
  const jwk = (jwks.keys || []).find((k) => k.kid === header.kid && k.kty === 'OKP' && k.crv === 'Ed25519');
  if (!jwk) throw new Error(`unknown key ${header.kid}`);
  const key = await crypto.subtle.importKey(
    'jwk',
    { kty: 'OKP', crv: 'Ed25519', x: jwk.x },
    { name: 'Ed25519' },
    false,
    ['verify'],
  );
  const signed = new TextEncoder().encode(`${parts[0]}.${parts[1]}`);
  const ok = await crypto.subtle.verify({ name: 'Ed25519' }, key, base64url(parts[2]), signed);
  if (!ok) throw new Error('bad signature');
  if (claims.iss !== 'waiting-room') throw new Error('another issuer');
  if (claims.aud !== show) throw new Error('a pass for another show');
  if (!(now < claims.exp)) throw new Error('the pass ran out');
  return { ticket: claims.sub, show: claims.aud, expiresAt: claims.exp, epoch: claims.epoch };
}
