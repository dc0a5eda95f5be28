// A CDN worker in front of a shop (Cloudflare Workers' module syntax): /checkout/ only for
// fans the waiting room admitted to SHOW, everyone else sent to queue; the rest passes
// through. WAITING_ROOM is the waiting room's public address (its page and API).
import { verifyPass } from './verify-pass.mjs';

const SHOW = 'show-42';
const GUARDED = '/checkout';
let cached = { at: 0, jwks: { keys: [] } };

async function keys(env, refresh) {
  // As long as the JWKS's Cache-Control allows (300 s), and once more on an unknown key.
  if (refresh || Date.now() - cached.at > 300_000) {
    const r = await fetch(`${env.WAITING_ROOM}/.well-known/jwks.json`);
    if (r.ok) cached = { at: Date.now(), jwks: await r.json() };
  }
  return cached.jwks;
}

function passOf(request) {
  const header = request.headers.get('X-Admission-Ticket');
  if (header) return header;
  const cookie = request.headers.get('Cookie') || '';
  const m = cookie.match(/(?:^|;\s*)wr_pass=([^;]+)/);
  return m ? m[1] : '';
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname !== GUARDED && !url.pathname.startsWith(`${GUARDED}/`)) return fetch(request);
    const pass = passOf(request);
    try {
      try {
        await verifyPass(pass, await keys(env, false), SHOW);
      } catch (e) {
        if (!String(e.message).startsWith('unknown key')) throw e;
        await verifyPass(pass, await keys(env, true), SHOW);
      }
    } catch {
      const back = encodeURIComponent(url.pathname + url.search);
      return Response.redirect(`${env.WAITING_ROOM}/wait/${SHOW}?return=${back}`, 303);
    }
    // The checkout redeems the pass (POST …/redeem) when the fan buys.
    const forwarded = new Request(request);
    forwarded.headers.set('X-Admission-Ticket', pass);
    return fetch(forwarded);
  },
};
