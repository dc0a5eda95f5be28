// The operator console: sign in with the operator token, watch every show's figures live,
// open and close on-sales, change the admission rate.
//
// The token is kept in sessionStorage (this tab only, gone when it closes) and sent as a
// bearer header on every call; the server has no session. The live feed is an SSE stream
// read with fetch(), because EventSource cannot send an Authorization header.
(() => {
  'use strict';

  const TOKEN_KEY = 'waiting-room:operator-token';
  const WATCH_KEY = 'waiting-room:watched';
  const HISTORY_MS = 5 * 60 * 1000;
  // Without a sample for this long, the figures on screen are called stale.
  const STALE_MS = 3500;
  const SHOW_ID = /^[A-Za-z0-9._-]{1,64}$/;

  const $ = (id) => document.getElementById(id);
  const els = {
    login: $('login'), loginForm: $('login-form'), token: $('token'), loginError: $('login-error'),
    loginButton: $('login-button'), console: $('console'), session: $('session'), logout: $('logout'),
    conn: $('conn'), connText: $('conn-text'), watchForm: $('watch-form'), watchShow: $('watch-show'),
    watchError: $('watch-error'), shows: $('shows'), noShows: $('no-shows'), template: $('show-card'),
  };

  // Every path comes from the server's contract (protocol.rs), through the page.
  const routes = document.getElementById('routes').dataset;
  const PHASE_WORDS = { pending: 'Not open yet', open: 'Open', paused: 'Paused', closed: 'Closed: no gate', ended: 'Ended' };
  const PHASE_DONE = {
    open: 'On-sale opened: the admitter lets fans through from the next tick.',
    pause: 'Paused: nobody is admitted, every place is kept and the gate stays shut. Open resumes.',
    close: 'Gate lifted: no more admissions, orders need no ticket, waiting fans were sent on.',
    end: 'On-sale ended: joins are refused, every waiting fan was told, the gate stays shut.',
  };
  const route = (name, show) => routes[`route${name}`].replace('{show_id}', encodeURIComponent(show || ''));

  const storage = {
    get(key) { try { return sessionStorage.getItem(key); } catch { return null; } },
    set(key, value) { try { sessionStorage.setItem(key, value); } catch { /* tab-only anyway */ } },
    remove(key) { try { sessionStorage.removeItem(key); } catch { /* nothing kept */ } },
  };

  let token = storage.get(TOKEN_KEY);
  let watched = new Set(readWatched());
  const history = new Map(); // show -> [{ at, queue, admitted }]
  const cards = new Map();   // show -> { el, stats }
  let stream = null;         // AbortController of the running feed
  let streamShows = new Set();
  let retryTimer = 0;
  let retryDelay = 1000;
  let lastSampleAt = 0;

  function readWatched() {
    try {
      const list = JSON.parse(storage.get(WATCH_KEY) || '[]');
      return Array.isArray(list) ? list.filter((s) => SHOW_ID.test(s)) : [];
    } catch {
      return [];
    }
  }

  function saveWatched() {
    storage.set(WATCH_KEY, JSON.stringify([...watched].sort()));
  }

  const fmt = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'));

  // The fan page's wording of a wait (wait.js `etaWords`).
  function etaWords(s) {
    if (s <= 0) return 'none';
    if (s < 60) return '< 1 min';
    const minutes = Math.floor((s + 30) / 60);
    if (minutes < 60) return `~${minutes} min`;
    const hours = Math.floor(minutes / 60);
    return `~${hours} h ${minutes % 60} min`;
  }

  // ---- signing in and out ------------------------------------------------------------------

  function showLogin(message) {
    stopStream();
    token = null;
    storage.remove(TOKEN_KEY);
    els.console.hidden = true;
    els.session.hidden = true;
    els.login.hidden = false;
    els.loginError.hidden = !message;
    els.loginError.textContent = message || '';
    els.loginButton.disabled = false;
    els.token.focus();
  }

  function showConsole() {
    els.login.hidden = true;
    els.console.hidden = false;
    els.session.hidden = false;
  }

  els.loginForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const value = els.token.value.trim();
    if (!value) return;
    token = value;
    els.loginButton.disabled = true;
    els.loginError.hidden = true;
    connect(true);
  });

  els.logout.addEventListener('click', () => {
    els.token.value = '';
    showLogin('Signed out.');
  });

  // Every API call: bearer header, and a refused token sends the operator back to sign-in.
  async function call(method, path, body) {
    const res = await fetch(path, {
      method,
      headers: Object.assign(
        { Authorization: `Bearer ${token}`, Accept: 'application/json' },
        body ? { 'Content-Type': 'application/json' } : {},
      ),
      body: body ? JSON.stringify(body) : undefined,
    });
    if (res.status === 401) {
      showLogin('The token was refused. Sign in again.');
      throw new Error('unauthorised');
    }
    return res;
  }

  // ---- the live feed -----------------------------------------------------------------------

  function setConn(kind, text) {
    els.conn.dataset.conn = kind;
    els.connText.textContent = text;
  }

  function stopStream() {
    clearTimeout(retryTimer);
    if (stream) stream.abort();
    stream = null;
  }

  async function connect(signingIn) {
    stopStream();
    const controller = new AbortController();
    stream = controller;
    streamShows = new Set(watched);
    setConn('connecting', 'Connecting…');
    const query = encodeURIComponent([...streamShows].sort().join(','));
    let res;
    try {
      res = await fetch(`${route('Feed')}?shows=${query}`, {
        headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' },
        cache: 'no-store',
        signal: controller.signal,
      });
    } catch {
      if (controller.signal.aborted) return;
      if (signingIn) {
        els.loginButton.disabled = false;
        els.loginError.textContent = 'The server could not be reached.';
        els.loginError.hidden = false;
        return;
      }
      return retryLater();
    }
    if (res.status === 401) {
      showLogin(signingIn ? 'That token was refused.' : 'The token was refused. Sign in again.');
      return;
    }
    if (!res.ok || !res.body) {
      if (signingIn) {
        els.loginButton.disabled = false;
        els.loginError.textContent = `The server answered ${res.status}.`;
        els.loginError.hidden = false;
        return;
      }
      return retryLater();
    }
    storage.set(TOKEN_KEY, token);
    showConsole();
    await read(res.body, controller);
    if (!controller.signal.aborted) retryLater();
  }

  function retryLater() {
    setConn('reconnecting', 'Feed lost. Reconnecting…');
    clearTimeout(retryTimer);
    retryTimer = setTimeout(() => connect(false), retryDelay);
    retryDelay = Math.min(retryDelay * 2, 10000);
  }

  // A minimal SSE reader: events are separated by a blank line; `event:` names them and
  // `data:` lines carry the JSON. Comments (keep-alives) start with a colon.
  async function read(body, controller) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer = (buffer + value).replace(/\r\n?/g, '\n');
        const blocks = buffer.split('\n\n');
        buffer = blocks.pop();
        for (const block of blocks) {
          let name = 'message';
          const data = [];
          for (const line of block.split('\n')) {
            if (!line || line.startsWith(':')) continue;
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'event') name = text;
            if (field === 'data') data.push(text);
          }
          if (name === 'stats' && data.length) {
            try { onSample(JSON.parse(data.join('\n'))); } catch (e) { console.error('bad sample', e); }
          }
        }
      }
    } catch {
      // Aborted on purpose, or the connection dropped: the caller decides.
    } finally {
      if (controller.signal.aborted) reader.cancel().catch(() => {});
    }
  }

  setInterval(() => {
    if (stream && lastSampleAt && Date.now() - lastSampleAt > STALE_MS) {
      const ago = Math.round((Date.now() - lastSampleAt) / 1000);
      setConn('reconnecting', `No figures for ${ago} s…`);
    }
  }, 1000);

  function onSample(sample) {
    lastSampleAt = Date.now();
    retryDelay = 1000;
    setConn('live', 'Live');
    let newShows = false;
    for (const s of sample.shows) {
      if (!watched.has(s.showId)) {
        // An on-sale opened elsewhere: keep it on screen even after it closes.
        watched.add(s.showId);
        newShows = true;
      }
      const points = history.get(s.showId) || [];
      points.push({
        at: sample.at, queue: s.queueLength, admitted: s.admittedSinceLast,
        rate: s.effectiveAdmitPerSecond ?? s.admitPerSecond,
      });
      while (points.length && sample.at - points[0].at > HISTORY_MS) points.shift();
      history.set(s.showId, points);
      updateCard(s);
    }
    if (newShows) {
      saveWatched();
      // Name it in the feed too, so it stays reported once closed.
      connect(false);
    }
    render();
  }

  // ---- show cards --------------------------------------------------------------------------

  function render() {
    const names = [...cards.keys()].sort();
    els.noShows.hidden = names.length > 0;
    names.forEach((name) => els.shows.appendChild(cards.get(name).el));
  }

  function card(show) {
    let c = cards.get(show);
    if (c) return c;
    const el = els.template.content.firstElementChild.cloneNode(true);
    el.dataset.show = show;
    el.querySelector('.show-title').textContent = show;
    const page = el.querySelector('.show-page');
    page.href = route('Page', show);
    for (const action of ['open', 'pause', 'close', 'end']) {
      el.querySelector(`[data-action="${action}"]`).addEventListener('click', () => changePhase(show, action));
    }
    el.querySelector('.stock-form').addEventListener('submit', (e) => {
      e.preventDefault();
      setStock(show, e.target.elements.stock.value);
    });
    el.querySelector('.rate-form').addEventListener('submit', (e) => {
      e.preventDefault();
      setRate(show, e.target.elements.rate.value);
    });
    const unwatch = document.createElement('button');
    unwatch.type = 'button';
    unwatch.className = 'link-button unwatch';
    unwatch.textContent = 'Stop watching';
    unwatch.addEventListener('click', () => {
      watched.delete(show);
      saveWatched();
      cards.delete(show);
      history.delete(show);
      el.remove();
      render();
      connect(false);
    });
    el.appendChild(unwatch);
    c = { el, stats: null };
    cards.set(show, c);
    return c;
  }

  function updateCard(stats) {
    const c = card(stats.showId);
    c.stats = Object.assign({}, c.stats, stats);
    const s = c.stats;
    const el = c.el;
    el.dataset.open = String(s.open);
    const badge = el.querySelector('.badge');
    // A lost show: the store forgot its queue (Redis restarted empty). Everything about it is
    // refused until the operator re-opens it, deliberately, from nothing.
    const phase = s.phase || (s.open ? 'open' : 'pending');
    badge.textContent = s.lost ? 'Lost: re-open to start again' : PHASE_WORDS[phase] + (phase === 'ended' && s.reason ? `: ${s.reason}` : '');
    badge.classList.toggle('open', s.open && !s.lost);
    badge.classList.toggle('lost', Boolean(s.lost));
    el.dataset.lost = String(Boolean(s.lost));
    for (const dd of el.querySelectorAll('[data-figure]')) {
      const key = dd.dataset.figure;
      if (key === 'backEta') {
        // The wait at the back, at the pace really measured (as the fans' ETAs are).
        const pace = Math.max(0.02, s.outflowPerSecond ?? s.admitPerSecond ?? 1);
        dd.textContent = s.queueLength === undefined ? '–' : etaWords(Math.ceil(s.queueLength / pace));
      } else if (key === 'pausedWords') {
        dd.textContent = s.paused === 'full' ? 'every place taken' : s.paused === 'paused' ? 'paused' : s.paused === 'pending' ? 'not open yet' : '';
      } else if (key === 'stockWords') {
        dd.textContent = typeof s.stock === 'number' ? `${fmt(s.stockLeft ?? s.stock)} of ${fmt(s.stock)}` : 'no stock set';
      } else if (key === 'outflowPerSecond' && typeof s[key] === 'number') {
        dd.textContent = s[key].toFixed(1);
      } else if (key in s) {
        dd.textContent = fmt(s[key]);
      }
    }
    el.querySelector('[data-action="open"]').disabled = s.open && !s.lost;
    el.querySelector('[data-action="pause"]').disabled = s.lost || !(phase === 'open' || phase === 'closed');
    el.querySelector('[data-action="close"]').disabled = s.lost || phase === 'closed';
    el.querySelector('[data-action="end"]').disabled = s.lost || phase === 'ended';
    const rate = el.querySelector('.rate-form input');
    // Never overwrite what the operator is typing.
    if (document.activeElement !== rate && !rate.dataset.dirty) rate.value = s.admitPerSecond;
    rate.oninput = () => { rate.dataset.dirty = '1'; };
    drawChart(stats.showId);
  }

  function message(show, text, isError) {
    const el = card(show).el.querySelector('.form-message');
    el.textContent = text;
    el.classList.toggle('error', Boolean(isError));
  }

  // Open, pause, close (lift the gate) or end an on-sale. Lifting the gate and ending are
  // asked once more: the first lets anyone buy without queueing, the second sends every
  // waiting fan away.
  async function changePhase(show, action) {
    let body;
    if (action === 'close' && !window.confirm(`Lift the gate of ${show}? Anyone can then order without queueing, and every waiting fan is sent on to the shop.`)) return;
    if (action === 'end') {
      const reason = window.prompt(`End the on-sale of ${show}? Every waiting fan is told it ended. Reason (optional, e.g. "sold out"):`, 'sold out');
      if (reason === null) return;
      if (reason.trim()) body = { reason: reason.trim() };
    }
    const button = card(show).el.querySelector(`[data-action="${action}"]`);
    button.disabled = true;
    try {
      const res = await call('POST', route(action[0].toUpperCase() + action.slice(1), show), body);
      if (res.status !== 204) throw new Error(await problem(res));
      const phase = { open: 'open', pause: 'paused', close: 'closed', end: 'ended' }[action];
      updateCard({ showId: show, open: action === 'open', phase, reason: body && body.reason, lost: false });
      message(show, PHASE_DONE[action]);
      if (!streamShows.has(show)) connect(false);
    } catch (e) {
      if (e.message !== 'unauthorised') message(show, `Could not ${action}: ${e.message}`, true);
      button.disabled = false;
    }
  }

  async function setStock(show, value) {
    const stock = Number(value);
    if (!Number.isInteger(stock) || stock < 0) {
      message(show, 'The stock is a whole number of seats (0 removes it).', true);
      return;
    }
    try {
      const res = await call('PUT', route('Config', show), { stock });
      if (res.status !== 200) throw new Error(await problem(res));
      updateCard(await res.json());
      message(show, stock === 0 ? 'No stock: admission follows the rate alone.' : `Stock set: never more fans admitted than the ${fmt(stock)} seats, and the last one sold ends the sale.`);
    } catch (e) {
      if (e.message !== 'unauthorised') message(show, `Could not set the stock: ${e.message}`, true);
    }
  }

  async function setRate(show, value) {
    const rate = Number(value);
    if (!Number.isInteger(rate) || rate < 1) {
      message(show, 'The rate is a whole number of fans per second, at least 1.', true);
      return;
    }
    try {
      const res = await call('PUT', route('Config', show), { admitPerSecond: rate });
      if (res.status !== 200) throw new Error(await problem(res));
      const input = card(show).el.querySelector('.rate-form input');
      delete input.dataset.dirty;
      updateCard(await res.json());
      message(show, `Rate set to ${fmt(rate)} per second. It applies from the next tick, and every fan's estimate is updated.`);
    } catch (e) {
      if (e.message !== 'unauthorised') message(show, `Could not change the rate: ${e.message}`, true);
    }
  }

  async function problem(res) {
    const body = await res.json().catch(() => ({}));
    return body.message || `the server answered ${res.status}`;
  }

  els.watchForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const show = els.watchShow.value.trim();
    if (!SHOW_ID.test(show)) {
      els.watchError.textContent = 'A show id is 1 to 64 letters, digits, dots, dashes or underscores.';
      els.watchError.hidden = false;
      return;
    }
    els.watchError.hidden = true;
    els.watchShow.value = '';
    watched.add(show);
    saveWatched();
    card(show);
    render();
    connect(false);
  });

  // ---- the chart ---------------------------------------------------------------------------

  const SVG = 'http://www.w3.org/2000/svg';
  const HEIGHT = 200;
  const LEFT = 56;
  const QUEUE_TOP = 14;
  const QUEUE_BOTTOM = 118;
  const ADMIT_TOP = 138;
  const ADMIT_BOTTOM = 178;
  const MIN_SPAN_MS = 60 * 1000;

  const ago = (ms) => (ms >= 60000 ? `${+(ms / 60000).toFixed(1)} min` : `${Math.round(ms / 1000)} s`);

  // 1, 2 or 5 times a power of ten, at least n: axis maxima a person reads easily.
  function niceMax(n) {
    if (n <= 0) return 1;
    const p = 10 ** Math.floor(Math.log10(n));
    for (const m of [1, 2, 5, 10]) if (m * p >= n) return m * p;
    return 10 * p;
  }

  function node(name, attrs, text) {
    const n = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
    if (text !== undefined) n.textContent = text;
    return n;
  }

  function drawChart(show) {
    const svg = cards.get(show).el.querySelector('.chart-svg');
    const points = history.get(show) || [];
    // Drawn at the size it is shown, so labels keep their size on any screen.
    const width = Math.max(320, Math.round(svg.clientWidth || 640));
    const RIGHT = width - 14;
    svg.setAttribute('viewBox', `0 0 ${width} ${HEIGHT}`);
    svg.replaceChildren();
    svg.dataset.samples = String(points.length);
    const now = points.length ? points[points.length - 1].at : Date.now();
    // The time axis spans the history there is (at least a minute, at most five), so a
    // console opened a moment ago already draws a readable chart.
    const span = Math.min(HISTORY_MS, Math.max(MIN_SPAN_MS, points.length ? now - points[0].at : 0));
    const x = (at) => LEFT + (RIGHT - LEFT) * (1 - (now - at) / span);
    const queueMax = niceMax(Math.max(0, ...points.map((p) => p.queue)));
    const admitMax = niceMax(Math.max(0, ...points.map((p) => Math.max(p.admitted || 0, p.rate || 0))));
    const qy = (v) => QUEUE_BOTTOM - (QUEUE_BOTTOM - QUEUE_TOP) * (v / queueMax);
    const ay = (v) => ADMIT_BOTTOM - (ADMIT_BOTTOM - ADMIT_TOP) * (v / admitMax);

    for (const y of [QUEUE_TOP, (QUEUE_TOP + QUEUE_BOTTOM) / 2, QUEUE_BOTTOM, ADMIT_TOP, ADMIT_BOTTOM]) {
      svg.appendChild(node('line', { class: 'grid', x1: LEFT, x2: RIGHT, y1: y, y2: y }));
    }
    svg.appendChild(node('text', { x: LEFT - 6, y: QUEUE_TOP + 4, 'text-anchor': 'end' }, fmt(queueMax)));
    svg.appendChild(node('text', { x: LEFT - 6, y: QUEUE_BOTTOM + 4, 'text-anchor': 'end' }, '0'));
    svg.appendChild(node('text', { x: LEFT - 6, y: ADMIT_TOP + 4, 'text-anchor': 'end' }, fmt(admitMax)));
    svg.appendChild(node('text', { x: LEFT - 6, y: ADMIT_BOTTOM + 4, 'text-anchor': 'end' }, '0'));
    svg.appendChild(node('text', { x: LEFT, y: 196 }, `${ago(span)} ago`));
    svg.appendChild(node('text', { x: (LEFT + RIGHT) / 2, y: 196, 'text-anchor': 'middle' }, `${ago(span / 2)} ago`));
    svg.appendChild(node('text', { x: RIGHT, y: 196, 'text-anchor': 'end' }, 'now'));

    const barWidth = Math.max(1, ((RIGHT - LEFT) / (span / 1000)) * 0.7);
    for (const p of points) {
      if (!p.admitted) continue;
      const top = ay(p.admitted);
      svg.appendChild(node('rect', {
        class: 'admit-bar', x: x(p.at) - barWidth, y: top, width: barWidth, height: ADMIT_BOTTOM - top,
      }));
    }
    // The rate in force over the admissions: where it steps down, the pace followed a
    // struggling checkout.
    const rated = points.filter((p) => typeof p.rate === 'number');
    if (rated.length) {
      const rateLine = rated.map((p) => `${x(p.at).toFixed(1)},${ay(Math.min(p.rate, admitMax)).toFixed(1)}`).join(' ');
      svg.appendChild(node('polyline', { class: 'rate-line', points: rateLine }));
    }
    if (points.length) {
      const line = points.map((p) => `${x(p.at).toFixed(1)},${qy(p.queue).toFixed(1)}`).join(' ');
      const first = x(points[0].at).toFixed(1);
      const last = x(points[points.length - 1].at).toFixed(1);
      svg.appendChild(node('path', {
        class: 'queue-area', d: `M${first},${QUEUE_BOTTOM} L${line.replace(/ /g, ' L')} L${last},${QUEUE_BOTTOM} Z`,
      }));
      svg.appendChild(node('polyline', { class: 'queue-line', points: line }));
    }
    const latest = points[points.length - 1];
    const admitted = points.reduce((sum, p) => sum + (p.admitted || 0), 0);
    svg.setAttribute('aria-label', latest
      ? `${show}: ${fmt(latest.queue)} in the queue now; ${fmt(admitted)} admitted in the last ${ago(now - points[0].at)}.`
      : `${show}: no figures yet.`);
  }

  window.addEventListener('resize', () => {
    for (const show of cards.keys()) drawChart(show);
  });

  // ---- start -------------------------------------------------------------------------------

  for (const show of watched) card(show);
  render();
  if (token) {
    showConsole();
    connect(false);
  } else {
    showLogin();
  }
})();
