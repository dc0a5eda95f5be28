// The fan's waiting page: join once per browser, then follow the ticket live.
//
// Transports, best first: Server-Sent Events, then a WebSocket, then polling the status
// endpoint with a growing interval. Each one reconnects by itself; a transport that never
// manages to connect hands over to the next. `?transport=ws` or `?transport=poll` starts
// further down the list (for testing and for networks known to break streams).
//
// The ticket lives in localStorage (per show), so a reload or a reopened tab keeps the place,
// and the server keeps it in an HttpOnly cookie scoped to this page, so that it can paint the
// position before any script.
(() => {
  'use strict';

  // The page header's language picker (custom shop templates may leave it out): with this
  // script a choice applies at once, so its submit button is not needed.
  const langPicker = document.querySelector('form.lang-picker');
  if (langPicker) {
    const langSelect = langPicker.querySelector('#lang-select');
    const langGo = langPicker.querySelector('.lang-go');
    if (langSelect) {
      if (langGo) langGo.hidden = true;
      langSelect.addEventListener('change', () => langPicker.submit());
    }
  }

  const root = document.getElementById('wait');
  if (!root) return;
  const show = root.dataset.show;
  // Every path and event name comes from the server's contract (protocol.rs), through the
  // page's data attributes: this script spells none of them.
  const route = (name, ticket) => root.dataset[`route${name}`]
    .replace('{show_id}', encodeURIComponent(show))
    .replace('{ticket_id}', encodeURIComponent(ticket || ''));
  const EVENT_NAMES = root.dataset.events.split(' ');
  const storageKey = `waiting-room:ticket:${show}`;

  // One key per browser and show: however often this page joins (two tabs, a lost answer
  // retried), the server hands out one place while it lives.
  // (getRandomValues works on plain http too, where randomUUID does not.)
  const randomKey = () => Array.from(crypto.getRandomValues(new Uint8Array(16)),
    (b) => b.toString(16).padStart(2, '0')).join('');
  function joinKey() {
    const name = `waiting-room:join-key:${show}`;
    try {
      let key = localStorage.getItem(name);
      if (!key) {
        key = randomKey();
        localStorage.setItem(name, key);
      }
      return key;
    } catch {
      return joinKey.fallback || (joinKey.fallback = randomKey());
    }
  }
  const params = new URLSearchParams(location.search);
  const TRANSPORTS = ['sse', 'ws', 'poll'];
  const startTransport = TRANSPORTS.includes(params.get('transport')) ? params.get('transport') : 'sse';

  // Polling starts at this interval and grows by half each poll up to the cap.
  const POLL_FIRST_MS = 1000;
  const POLL_MAX_MS = 10000;
  // Screen readers hear the position at most this often; admission is always announced.
  const ANNOUNCE_EVERY_MS = 20000;

  const $ = (id) => document.getElementById(id);
  const els = {
    conn: $('conn'), connText: $('conn-text'),
    position: $('position'), ahead: $('ahead'), eta: $('eta'),
    progress: $('progress'), progressFill: $('progress-fill'), progressCaption: $('progress-caption'),
    notOpen: $('not-open'), pausedFull: $('paused-full'), countdown: $('countdown'),
    pausedNote: $('paused-note'), stockLeft: $('stock-left'), endedReason: $('ended-reason'), releasedText: $('released-text'),
    checkout: $('checkout'), holdId: $('hold-id'), email: $('email'), amount: $('amount'),
    placeOrder: $('place-order'), orderError: $('order-error'),
    ticketLine: $('ticket-line'), ticketId: $('ticket-id'),
    announce: $('announce'), alert: $('alert'),
    errorText: $('error-text'), errorRetry: $('error-retry'),
    opensIn: $('opens-in'), openingNow: $('opening-now'), arrival: $('arrival'),
    powStatus: $('pow-status'), powText: $('pow-text'), powProgress: $('pow-progress'),
  };

  let record = null;      // { ticketId, firstPosition, joinedAt, order? }
  let follower = null;    // the running transport: { stop() }
  let state = root.dataset.state;
  let deadline = 0;       // when the admission runs out (ms, local clock)
  let countdownTimer = 0;
  let opensAt = 0;        // when a scheduled on-sale opens (ms, local clock)
  let openingTimer = 0;
  const EXPIRY_GRACE_MS = 2000;
  let lastAnnounced = 0;
  let showOpen = root.dataset.open === 'true';

  // ---- storage -----------------------------------------------------------------------------

  function load() {
    try {
      const r = JSON.parse(localStorage.getItem(storageKey));
      return r && typeof r.ticketId === 'string' ? r : null;
    } catch {
      return null; // storage off or garbled: behave as a fresh visit
    }
  }

  function save() {
    try {
      if (record) localStorage.setItem(storageKey, JSON.stringify(record));
      else localStorage.removeItem(storageKey);
    } catch { /* private mode: the place lasts as long as the tab */ }
    // The wr_ticket cookie is the server's (HttpOnly, set on join, cleared on leave).
  }

  const isUuid = (s) => typeof s === 'string' &&
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);

  // ---- words -------------------------------------------------------------------------------

  // Every word this script shows comes from the page's language catalog, which the server
  // embeds as a data island (`#wr-messages`): its messages, digits and grouping. Whatever it
  // says is plain text: it is always set with textContent, never as HTML.
  const I18N = (() => {
    const fallback = { lang: 'en', dir: 'ltr', digits: '0123456789', group: ',', groupMin: 1, messages: {} };
    const island = document.getElementById('wr-messages');
    if (!island) return fallback;
    try {
      const data = JSON.parse(island.textContent);
      return {
        ...fallback,
        ...data,
        messages: data && typeof data.messages === 'object' && data.messages ? data.messages : {},
      };
    } catch {
      return fallback;
    }
  })();
  const DIGITS = (() => {
    const d = Array.from(String(I18N.digits || ''));
    return d.length === 10 ? d : Array.from('0123456789');
  })();
  const GROUP = typeof I18N.group === 'string' ? I18N.group : ',';
  const GROUP_MIN = Number(I18N.groupMin) >= 1 ? Number(I18N.groupMin) : 1;
  const plurals = (() => {
    try { return new Intl.PluralRules(I18N.lang); } catch { return null; }
  })();

  // ASCII digits in `text` as the language writes them (clocks like 4:05).
  const digitsOf = (text) => String(text).replace(/[0-9]/g, (c) => DIGITS[c.charCodeAt(0) - 48]);

  // A whole number in the language's digits, grouped by thousands only from 3 + groupMin
  // digits on (by hand, not toLocaleString: the server's first paint formats the same way).
  function fmt(n) {
    const value = Math.round(Number(n)) || 0;
    const plain = String(Math.abs(value));
    let out = plain;
    if (GROUP && plain.length >= 3 + GROUP_MIN) {
      out = '';
      for (let i = 0; i < plain.length; i += 1) {
        if (i > 0 && (plain.length - i) % 3 === 0) out += GROUP;
        out += plain[i];
      }
    }
    return (value < 0 ? '-' : '') + digitsOf(out);
  }

  // The catalog's text for `key`, its plural form picked by `args.n` and every `{name}` filled
  // from `args` (numbers through fmt, strings as they are). A missing key says itself.
  const missing = new Set();
  function t(key, args = {}) {
    let text = Object.prototype.hasOwnProperty.call(I18N.messages, key) ? I18N.messages[key] : undefined;
    if (text && typeof text === 'object') {
      let form = 'other';
      if (plurals && typeof args.n === 'number') {
        try { form = plurals.select(args.n); } catch { form = 'other'; }
      }
      text = typeof text[form] === 'string' ? text[form] : text.other;
    }
    if (typeof text !== 'string') {
      if (!missing.has(key)) {
        missing.add(key);
        console.warn(`wait.js: no message for ${key}`);
      }
      return key;
    }
    return text.replace(/\{(\w+)\}/g, (whole, name) => {
      const value = args[name];
      if (typeof value === 'number') return fmt(value);
      return value === undefined || value === null ? whole : String(value);
    });
  }

  // The waits, the fans ahead and the clocks: src/i18n words them the same way, with the same
  // keys, for the server's first paint. Change one, change the other.
  function etaWords(s) {
    if (s <= 0) return t('eta.now');
    if (s < 60) return t('eta.under_minute');
    const minutes = Math.floor((s + 30) / 60);
    if (minutes < 60) return t('eta.minutes', { n: minutes });
    if (minutes >= 24 * 60) return t('eta.day_plus');
    const rounded = Math.floor((minutes + 2) / 5) * 5;
    const hours = Math.floor(rounded / 60);
    const rest = rounded % 60;
    if (rest === 0) return t('eta.hours', { n: hours });
    return t('eta.hours_minutes', {
      hours: t('eta.hour_part', { n: hours }),
      minutes: t('eta.minute_part', { n: rest }),
    });
  }

  // A range when the pace is uncertain.
  function waitWords(view) {
    const low = view.etaMinSeconds, high = view.etaMaxSeconds;
    if (low === undefined || high === undefined) return etaWords(view.etaSeconds);
    const lowM = Math.floor((low + 30) / 60), highM = Math.floor((high + 30) / 60);
    if (highM <= 1 || lowM === highM || highM >= 24 * 60) return etaWords(view.etaSeconds);
    if (highM < 60) {
      return lowM === 0
        ? t('eta.up_to_minutes', { n: highM })
        : t('eta.range_minutes', { low: lowM, high: highM });
    }
    const lowH = Math.floor((lowM + 30) / 60), highH = Math.floor((highM + 30) / 60);
    if (lowH === highH) return etaWords(view.etaSeconds);
    return lowH === 0
      ? t('eta.up_to_hours', { n: highH })
      : t('eta.range_hours', { low: lowH, high: highH });
  }

  function aheadWords(position, awayAhead) {
    const ahead = position - 1;
    if (ahead <= 0) return t('wait.waiting.next');
    const words = t('wait.waiting.ahead', { n: ahead });
    return awayAhead > 0 ? `${words} ${t('wait.waiting.away', { n: awayAhead })}` : words;
  }

  const two = (n) => String(n).padStart(2, '0');
  const clock = (s) => digitsOf(`${Math.floor(s / 60)}:${two(s % 60)}`);

  // Time until an opening as a clock: 4:05, 1:02:03, 3 d 04:05:06 beyond a day.
  function countdown(total) {
    const d = Math.floor(total / 86400);
    const h = Math.floor(total / 3600) % 24;
    const m = Math.floor(total / 60) % 60;
    const s = total % 60;
    if (d > 0) return t('clock.days', { d, hms: digitsOf(`${two(h)}:${two(m)}:${two(s)}`) });
    if (h > 0) return digitsOf(`${h}:${two(m)}:${two(s)}`);
    return digitsOf(`${m}:${two(s)}`);
  }
  // ---- (end of the words src/i18n shares)

  // A refused join in the fan's words, by its HTTP status: the API's `message` is English by
  // design, so it is shown only where it tells the fan something the status cannot.
  function joinRefusal(status, body, withCode) {
    if (status === 429) return t('script.error.busy');
    if (status === 410) return t('error.ended');
    if (status === 404) return t('error.not_found');
    if (status === 403 && withCode && body.message) return t('script.error.code_refused', { reason: body.message });
    if (status === 503) return t('error.full');
    if (status >= 500) return t('error.other');
    return body.message ? `${t('error.refused')} ${body.message}` : t('script.error.status', { status });
  }

  function announce(text, urgent) {
    const el = urgent ? els.alert : els.announce;
    // Clearing first makes a repeated sentence be read again.
    el.textContent = '';
    setTimeout(() => { el.textContent = text; }, 50);
  }

  // ---- what the page shows -----------------------------------------------------------------

  function setState(next) {
    state = next;
    root.dataset.state = next;
    for (const panel of root.querySelectorAll('[data-panel]')) {
      panel.hidden = panel.dataset.panel !== next;
    }
    if (next !== 'admitted') stopCountdown();
    if (next !== 'prequeue') clearInterval(openingTimer);
    const following = next === 'waiting' || next === 'admitted' || next === 'prequeue';
    if (!following) setConn(null);
  }

  function setConn(kind, detail) {
    if (!kind) {
      els.conn.hidden = true;
      return;
    }
    els.conn.hidden = false;
    els.conn.dataset.conn = kind;
    els.connText.textContent = {
      connecting: () => t('wait.connecting'),
      live: () => t('script.conn.live'),
      reconnecting: () => t('script.conn.reconnecting'),
      polling: () => t('script.conn.polling', { n: Math.round((detail || POLL_FIRST_MS) / 1000) }),
    }[kind]();
  }

  function showTicket() {
    els.ticketLine.hidden = !record;
    els.ticketId.textContent = record ? record.ticketId : '';
    root.dataset.ticket = record ? record.ticketId : '';
  }

  function renderWaiting(view) {
    const position = view.position;
    if (!record.firstPosition || position > record.firstPosition) {
      record.firstPosition = position;
      save();
    }
    const wasWaiting = state === 'waiting';
    setState('waiting');
    root.dataset.position = String(position);
    root.dataset.eta = String(view.etaSeconds);
    els.position.textContent = fmt(position);
    // A lane's fan (a presale or priority code): its place is in its lane.
    const lane = $('lane-name');
    if (lane) {
      lane.hidden = !view.lane;
      $('lane').textContent = view.lane || '';
    }
    els.ahead.textContent = aheadWords(position, view.awayAhead);
    els.eta.textContent = waitWords(view);
    // The server says why the queue stands still (`paused`: pending, paused or full). A
    // paused queue has no ETA: nobody knows when it resumes.
    if (!view.fromPaint) showOpen = view.paused !== 'pending';
    const paused = view.paused === 'paused';
    els.pausedFull.hidden = view.paused !== 'full';
    els.pausedNote.hidden = !paused;
    els.notOpen.hidden = showOpen || paused;
    // Not open, and no opening announced (a set opening keeps fans in the pre-queue): the
    // server tells no ETA, so nothing is counted from (page.rs `NOT_OPEN_YET`).
    if (!showOpen) els.eta.textContent = t('eta.not_open');
    if (paused) els.eta.textContent = t('eta.paused');
    // Seats left against the fans ahead: the odds, told early.
    if (typeof view.stockLeft === 'number') {
      els.stockLeft.hidden = false;
      els.stockLeft.textContent = view.stockLeft === 0
        ? t('script.stock.none')
        : view.stockLeft < position
          ? t('script.stock.short', { n: view.stockLeft, ahead: t('script.stock.ahead', { n: position - 1 }) })
          : t('script.stock.left', { n: view.stockLeft });
    } else {
      els.stockLeft.hidden = true;
    }

    const first = record.firstPosition;
    const pct = Math.max(0, Math.min(100, ((first - position) / first) * 100));
    els.progressFill.style.width = `${pct}%`;
    els.progress.setAttribute('aria-valuenow', String(Math.round(pct)));
    els.progressCaption.textContent = first > position
      ? t('script.progress.gone', { gone: first - position, n: first - 1 })
      : t('script.progress.start');

    const now = Date.now();
    if (!wasWaiting || now - lastAnnounced > ANNOUNCE_EVERY_MS) {
      lastAnnounced = now;
      announce(t('script.announce.position', { position, eta: waitWords(view) }));
    }
  }

  // In a scheduled show's pre-queue: no place until the draw, a countdown to the opening.
  function renderPreQueue(view) {
    const wasPre = state === 'prequeue';
    setState('prequeue');
    if (view.arrival) els.arrival.textContent = fmt(view.arrival);
    opensAt = Date.now() + (view.opensInSeconds || 0) * 1000;
    clearInterval(openingTimer);
    const tick = () => {
      const left = Math.max(0, Math.ceil((opensAt - Date.now()) / 1000));
      els.opensIn.textContent = countdown(left);
      els.openingNow.hidden = left > 0;
    };
    tick();
    openingTimer = setInterval(tick, 500);
    if (!wasPre) {
      announce(t('script.announce.prequeue', { countdown: countdown(view.opensInSeconds || 0) }));
    }
  }

  function renderAdmitted(view) {
    const wasAdmitted = state === 'admitted';
    setState('admitted');
    els.progressFill.style.width = '100%';
    deadline = Date.now() + (view.expiresInSeconds || 0) * 1000;
    // The signed pass, when the server sent one, is what the checkout presents.
    if (record && view.pass) { record.pass = view.pass; save(); }
    if (view.pass && root.dataset.return) { goBack(view.pass); return; }
    startCountdown();
    if (!wasAdmitted) {
      document.title = t('wait.title_turn', { show });
      announce(t('script.announce.turn', { time: clock(view.expiresInSeconds || 0) }), true);
      if (!els.holdId.value) els.holdId.value = `hold-${Math.random().toString(36).slice(2, 8)}`;
      els.email.focus({ preventScroll: true });
    }
  }

  // Gateway mode: the fan was sent here from a guarded path of the shop. Its pass becomes the
  // cookie the gateway reads (HttpOnly: only the server can set it), then the fan goes back.
  let goingBack = false;
  async function goBack(pass) {
    if (goingBack) return;
    goingBack = true;
    announce(t('script.announce.going_back'), true);
    try {
      const r = await fetch(root.dataset.routeKeepPass.replace('{show_id}', encodeURIComponent(show)), {
        method: 'POST',
        headers: { [root.dataset.admissionHeader]: pass },
        credentials: 'same-origin',
      });
      if (r.ok) { location.assign(root.dataset.return); return; }
    } catch (e) { /* shown below: the order form stays */ }
    goingBack = false;
    startCountdown();
  }

  function startCountdown() {
    stopCountdown();
    const tick = () => {
      const left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
      els.countdown.textContent = clock(left);
      els.countdown.classList.toggle('low', left <= 60);
      // The shown deadline comes from whole seconds and may be up to half a second early;
      // the server's `expired` event (or a poll's UNKNOWN) comes at the exact moment. Only if
      // neither arrives does the clock end the admission itself, a little after the fact.
      if (Date.now() >= deadline + EXPIRY_GRACE_MS) {
        finish('expired');
      }
    };
    tick();
    countdownTimer = setInterval(tick, 500);
  }

  function stopCountdown() {
    clearInterval(countdownTimer);
    countdownTimer = 0;
  }

  function renderOrdered(order, created) {
    setState('ordered');
    $('order-id').textContent = order.id;
    $('order-status').textContent = order.status;
    $('order-hold').textContent = order.holdId;
    $('order-amount').textContent = Number(order.amount).toFixed(2);
    $('order-email').textContent = order.customerEmail;
    $('order-note').textContent = created
      ? t('script.order.confirmed')
      : t('script.order.repeated');
    document.title = t('wait.title_ordered', { show });
    announce(t('script.announce.ordered', { order: String(order.id) }), true);
  }

  // The ticket's journey is over (expired, unknown, lost, left, closed, ended): stop following it.
  function finish(next, view) {
    stopFollowing();
    document.title = t('wait.title', { show });
    if (next === 'expired') announce(t('script.announce.expired'), true);
    if (next === 'unknown') announce(t('script.announce.unknown'), true);
    if (next === 'released') {
      // The server's `message` (English, with the hold's length) is said in the page's
      // language by the panel's own lead, as the first paint says it.
      els.releasedText.textContent = t('wait.released.lead');
      announce(els.releasedText.textContent, true);
    }
    if (next === 'lost') announce(t('script.announce.lost'), true);
    if (next === 'closed') announce(t('script.announce.closed'), true);
    if (next === 'ended') {
      const why = view && view.reason
        ? t('wait.ended.reason', { show, reason: String(view.reason) })
        : t('wait.ended.lead', { show });
      els.endedReason.textContent = why;
      announce(why, true);
    }
    setState(next);
  }

  // ---- events from any transport -----------------------------------------------------------

  // Between pushes a waiting page counts its position down by `countdownPerSecond` at each
  // tick, one a second from `lastTickSecond`, the ETA with it (README: Push cadence). The
  // ticks' phase on this clock is the smallest gap between a push's arrival and its tick
  // second: pushes come right after a tick, corrections later. Far back the server pushes
  // only now and then, and at once whenever this count would be wrong.
  let countTimer = 0;
  const tickGaps = [];
  function stopCounting() {
    clearTimeout(countTimer);
    countTimer = 0;
  }
  function startCounting(view) {
    const per = view.countdownPerSecond;
    const tick = view.lastTickSecond;
    if (!per || tick === undefined || view.fromPaint) return;
    tickGaps.push(Date.now() - tick * 1000);
    if (tickGaps.length > 16) tickGaps.shift();
    const phase = Math.min(...tickGaps);
    const step = () => {
      const now = Date.now();
      const ticks = Math.max(0, Math.floor((now - phase) / 1000) - tick);
      const position = Math.max(1, view.position - per * ticks);
      if (ticks > 0 && state === 'waiting') {
        root.dataset.counted = String(ticks);
        // Fans ahead who are away will be passed over: the ETA skips them (awayAhead).
        const present = Math.max(1, position - (view.awayAhead || 0));
        renderWaiting({ ...view, position, etaSeconds: Math.ceil(present / per) });
      }
      if (position > 1) countTimer = setTimeout(step, (tick + ticks + 1) * 1000 + phase - now);
    };
    step();
  }

  // Returns true when the ticket's journey ended, so the transport stops.
  function handle(event, view) {
    if (!record || !view || view.ticketId !== record.ticketId) return false;
    if (state === 'ordered') return true;
    stopCounting();
    switch (event) {
      case 'waiting':
        if (view.preQueue) {
          renderPreQueue(view);
        } else {
          if (state === 'prequeue') {
            clearInterval(openingTimer);
            announce(t('script.announce.drawn', { position: view.position }), true);
          }
          renderWaiting(view);
          startCounting(view);
        }
        return false;
      case 'admitted': renderAdmitted(view); return false;
      // An admission that ran out, or a place released after its fan was away too long.
      case 'expired': finish(view.status === 'EXPIRED' ? 'released' : 'expired', view); return true;
      case 'closed': finish('closed', view); return true;
      case 'ended': finish('ended', view); return true;
      // A place a Redis failover lost comes as `unknown` (a push) or 410 (a poll), its JSON
      // saying LOST: the fan is told so, not that the ticket cannot be found.
      default: finish(view.status === 'LOST' ? 'lost' : 'unknown'); return true;
    }
  }

  // A poll answers a status, not an event: an UNKNOWN after an admission is its expiry; a
  // LOST (410) is a place a failover lost, whatever the page showed before.
  function eventOf(view) {
    if (view.status === 'LOST') return 'unknown';
    if (view.status === 'EXPIRED') return 'expired';
    if (view.status === 'WAITING') return 'waiting';
    if (view.status === 'ADMITTED') return 'admitted';
    if (view.status === 'CLOSED') return 'closed';
    if (view.status === 'ENDED') return 'ended';
    return state === 'admitted' ? 'expired' : 'unknown';
  }

  // ---- transports --------------------------------------------------------------------------

  function follow(kind) {
    stopFollowing();
    setConn('connecting');
    follower = ({ sse: followSse, ws: followWs, poll: followPoll })[kind](record.ticketId);
    root.dataset.transport = kind;
  }

  function stopFollowing() {
    if (follower) follower.stop();
    follower = null;
  }

  function fallBack(from) {
    const next = TRANSPORTS[TRANSPORTS.indexOf(from) + 1];
    if (next) follow(next);
  }

  function followSse(ticket) {
    const source = new EventSource(route('Events', ticket));
    let heard = false;
    let failures = 0;
    let stopped = false;
    const stop = () => { stopped = true; source.close(); };
    source.onopen = () => { failures = 0; setConn('live'); };
    for (const name of EVENT_NAMES) {
      source.addEventListener(name, (e) => {
        heard = true;
        let view;
        try { view = JSON.parse(e.data); } catch { return; }
        if (handle(name, view)) stop();
      });
    }
    source.onerror = () => {
      if (stopped) return;
      failures += 1;
      // CLOSED: the browser gave up (not an event stream, an HTTP error). A stream that
      // never delivered anything in three tries is likely blocked on the way: try the next.
      if (source.readyState === EventSource.CLOSED || (!heard && failures >= 3)) {
        stop();
        fallBack('sse');
        return;
      }
      setConn('reconnecting');
    };
    return { stop };
  }

  function followWs(ticket) {
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    let socket = null;
    let stopped = false;
    let heard = false;
    let failures = 0;
    let retry = 0;
    const connect = () => {
      socket = new WebSocket(`${scheme}//${location.host}${route('Ws', ticket)}`);
      socket.onopen = () => { failures = 0; setConn('live'); };
      socket.onmessage = (e) => {
        heard = true;
        let frame;
        try { frame = JSON.parse(e.data); } catch { return; }
        if (handle(frame.event, frame)) stop();
      };
      socket.onclose = () => {
        if (stopped) return;
        failures += 1;
        if (!heard && failures >= 2) {
          stop();
          fallBack('ws');
          return;
        }
        setConn('reconnecting');
        // Doubling up to 10 s, each wait drawn from the upper half of its ceiling: a crowd
        // dropped at once does not come back at once.
        const ceiling = Math.min(1000 * 2 ** (failures - 1), 10000);
        retry = setTimeout(connect, ceiling / 2 + Math.random() * ceiling / 2);
      };
    };
    const stop = () => {
      stopped = true;
      clearTimeout(retry);
      if (socket) socket.close();
    };
    connect();
    return { stop };
  }

  function followPoll(ticket) {
    const url = route('Ticket', ticket);
    let delay = POLL_FIRST_MS;
    let stopped = false;
    let timer = 0;
    const poll = async () => {
      try {
        const res = await fetch(url, { cache: 'no-store', headers: { Accept: 'application/json' } });
        if (stopped) return;
        // 404 UNKNOWN, 410 LOST (a place a Redis failover lost) and 410 EXPIRED (released
        // after the fan was away too long) are answers, not failures.
        if (![200, 404, 410].includes(res.status)) throw new Error(`status ${res.status}`);
        const view = await res.json();
        if (stopped) return;
        if (handle(eventOf(view), view)) { stop(); return; }
        delay = Math.min(delay * 1.5, POLL_MAX_MS);
        setConn('polling', delay);
      } catch {
        if (stopped) return;
        delay = Math.min(delay * 2, POLL_MAX_MS);
        setConn('reconnecting');
      }
      timer = setTimeout(poll, delay);
    };
    const stop = () => { stopped = true; clearTimeout(timer); };
    poll();
    return { stop };
  }

  // ---- joining -----------------------------------------------------------------------------

  let joinRetry = 0;

  // The show may ask a proof of work before a join (against bots): ask for a challenge, and
  // when it has bits, solve it in a Web Worker while the status line says how far it got.
  // Resolves to the proof header's value, or null when none is asked.
  async function proveJoin() {
    const res = await fetch(route('Challenge'), { method: 'POST', headers: { Accept: 'application/json' } });
    if (!res.ok) return null; // the join itself will say what is wrong
    const { challenge, bits } = await res.json();
    if (!bits) return null;
    const expected = 2 ** bits;
    els.powStatus.hidden = false;
    const started = performance.now();
    const nonce = await new Promise((resolve, reject) => {
      const worker = new Worker(root.dataset.powWorker);
      worker.onmessage = ({ data }) => {
        const done = Math.min(99, Math.floor((data.hashes / expected) * 100));
        els.powProgress.value = data.nonce === undefined ? done : 100;
        els.powText.textContent = data.nonce === undefined
          ? t('script.pow.progress', { percent: done })
          : t('script.pow.done');
        if (data.nonce !== undefined) { worker.terminate(); resolve(data.nonce); }
      };
      worker.onerror = (e) => { worker.terminate(); reject(e); };
      els.powText.textContent = t('wait.joining.pow');
      els.powProgress.value = 0;
      worker.postMessage({ challenge, bits });
    });
    root.dataset.powMs = String(Math.round(performance.now() - started));
    root.dataset.powBits = String(bits);
    return `${challenge}:${nonce}`;
  }

  async function join() {
    clearTimeout(joinRetry);
    stopFollowing();
    setState('joining');
    try {
      const headers = { Accept: 'application/json', [root.dataset.idempotencyHeader]: joinKey() };
      const proof = await proveJoin();
      if (proof) headers[root.dataset.proofHeader] = proof;
      // A presale or priority code the fan typed (the show takes codes).
      const code = $('access-code');
      const withCode = Boolean(code && code.value.trim());
      if (withCode) headers[root.dataset.codeHeader] = code.value.trim();
      const res = await fetch(route('Join'), { method: 'POST', headers });
      const body = await res.json().catch(() => ({}));
      // 202: a new place; 200: the place this browser already holds (same key).
      if ((res.status === 202 || res.status === 200) && isUuid(body.ticketId)) {
        record = { ticketId: body.ticketId, firstPosition: body.position || 0, joinedAt: Date.now() };
        save();
        showTicket();
        startFollowing(body);
        return;
      }
      if (res.status === 429) {
        const wait = Number(res.headers.get('Retry-After')) || 2;
        joinFailed(t('script.error.busy'), wait);
        return;
      }
      joinFailed(joinRefusal(res.status, body, withCode), res.status >= 500 ? 5 : 0);
    } catch {
      joinFailed(t('wait.error.lead'), 5);
    }
  }

  function joinFailed(message, retryInSeconds) {
    setState('error');
    els.errorText.textContent = message;
    els.errorRetry.textContent = retryInSeconds ? t('script.error.retry', { n: retryInSeconds }) : '';
    if (retryInSeconds) joinRetry = setTimeout(join, retryInSeconds * 1000);
  }

  function startFollowing(firstView) {
    if (firstView) handle(eventOf(firstView), firstView);
    const following = new Set(['prequeue', 'waiting', 'admitted', 'joining', 'new']);
    if (following.has(state)) {
      follow(startTransport);
    }
  }

  async function leave() {
    if (!record) return;
    // A mis-tap would cost the fan a place that took minutes to earn.
    if (!window.confirm(t('script.leave.confirm'))) return;
    const id = record.ticketId;
    stopFollowing();
    try {
      await fetch(route('Ticket', id), { method: 'DELETE' });
    } catch { /* the ticket is forgotten here either way; the queue drops it at admission */ }
    record = null;
    save();
    showTicket();
    finish('left');
    announce(t('script.announce.left'));
  }

  // ---- checkout ----------------------------------------------------------------------------

  async function placeOrder(event) {
    event.preventDefault();
    els.orderError.hidden = true;
    const amount = els.amount.value.trim().replace(',', '.');
    const problem =
      !els.holdId.value.trim() ? t('script.order.enter_hold') :
      !els.email.checkValidity() || !els.email.value.trim() ? t('script.order.enter_email') :
      !/^\d+(\.\d{1,2})?$/.test(amount) || Number(amount) <= 0 ? t('script.order.enter_amount') : null;
    if (problem) return orderFailed(problem);
    els.placeOrder.disabled = true;
    els.placeOrder.textContent = t('script.order.placing');
    try {
      const res = await fetch(route('Orders'), {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json',
          [root.dataset.admissionHeader]: record ? record.pass || record.ticketId : '',
        },
        body: JSON.stringify({
          showId: show,
          holdId: els.holdId.value.trim(),
          customerEmail: els.email.value.trim(),
          amount: Number(amount),
        }),
      });
      const body = await res.json().catch(() => ({}));
      if (res.status === 201 || res.status === 200) {
        record.order = body;
        save();
        stopFollowing();
        renderOrdered(body, res.status === 201);
        return;
      }
      orderFailed(orderRefusal(res.status, body));
    } catch {
      orderFailed(t('script.order.unreachable'));
    } finally {
      els.placeOrder.disabled = false;
      els.placeOrder.textContent = t('wait.admitted.order');
    }
  }

  // A refused order in the fan's words, by its HTTP status; the API's `message` (English by
  // design) follows where it says what to fix (a bad email, a hold ordered already).
  function orderRefusal(status, body) {
    if (status === 403) return t('script.order.not_accepted', { reason: body.message || t('script.order.forbidden') });
    if (status === 410) return t('error.ended');
    if (status === 429) return t('error.busy');
    if (status >= 500) return t('error.other');
    return body.message ? `${t('script.order.refused')} ${body.message}` : t('script.order.refused_status', { status });
  }

  function orderFailed(message) {
    els.orderError.textContent = message;
    els.orderError.hidden = false;
  }

  // ---- "notify me" ------------------------------------------------------------------------

  // Where the browser can take pushes, the fan may ask to be called when its turn is near and
  // close the tab: the server pushes `soon` and `admitted` (at most once each) through this
  // browser's push service, and the worker shows them (static/notify-worker.js).
  function offerNotify() {
    if (!('serviceWorker' in navigator) || !('PushManager' in window) || !('Notification' in window)) return;
    $('notify-row').hidden = false;
    $('notify').addEventListener('click', askToBeNotified);
  }

  function base64UrlBytes(text) {
    const b64 = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4);
    return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  }

  async function askToBeNotified() {
    const status = $('notify-status');
    const button = $('notify');
    if (!record) return;
    button.disabled = true;
    status.textContent = t('script.notify.asking');
    try {
      const permission = await Notification.requestPermission();
      if (permission !== 'granted') throw new Error(t('script.notify.blocked'));
      const registration = await navigator.serviceWorker.register(root.dataset.notifyWorker);
      await navigator.serviceWorker.ready;
      const res = await fetch(route('Vapid'), { cache: 'no-store' });
      if (!res.ok) throw new Error(t('script.notify.no_key', { status: res.status }));
      const { publicKey } = await res.json();
      const subscription = await registration.pushManager.subscribe({
        userVisibleOnly: true,
        applicationServerKey: base64UrlBytes(publicKey),
      });
      const asked = await fetch(route('Notify', record.ticketId), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(subscription.toJSON()),
      });
      if (asked.status !== 204) {
        const body = await asked.json().catch(() => ({}));
        throw new Error(body.message || body.error || t('script.notify.status', { status: asked.status }));
      }
      status.textContent = t('script.notify.on');
      root.dataset.notify = 'on';
    } catch (e) {
      status.textContent = t('script.notify.failed', { reason: String((e && e.message) || e) });
      root.dataset.notify = 'failed';
      button.disabled = false;
    }
  }

  // ---- start -------------------------------------------------------------------------------

  function start() {
    for (const form of root.querySelectorAll('.join-form')) {
      form.addEventListener('submit', (e) => { e.preventDefault(); join(); });
    }
    $('leave').addEventListener('click', leave);
    $('leave-pre').addEventListener('click', leave);
    offerNotify();
    els.checkout.addEventListener('submit', placeOrder);

    // This browser's own ticket wins: a link with someone else's ?ticket= must not take the
    // place it holds. Then the link's (the fan's own, opened on another device), then the
    // one the server painted (the cookie of a join made without JavaScript).
    const fromQuery = params.get('ticket');
    const stored = load();
    const painted = root.dataset.ticket;
    const ticket = stored ? stored.ticketId : isUuid(fromQuery) ? fromQuery : isUuid(painted) ? painted : null;
    if (!ticket) {
      // A show that takes codes waits for the fan to type one (or to join without): the
      // form with its code field stays up.
      if ($('access-code')) return;
      join();
      return;
    }
    record = stored && stored.ticketId === ticket
      ? stored
      : { ticketId: ticket, firstPosition: 0, joinedAt: Date.now() };
    save();
    if (fromQuery) {
      // The ticket is kept now; a copied address must not hand the place to someone else.
      params.delete('ticket');
      const rest = params.toString();
      history.replaceState(null, '', `${location.pathname}${rest ? `?${rest}` : ''}`);
    }
    showTicket();
    if (record.order) {
      renderOrdered(record.order, true);
      return;
    }
    // Start from what the server painted if it is this ticket's, then follow.
    if (painted === ticket && state === 'prequeue') {
      renderPreQueue({ ticketId: ticket, opensInSeconds: Number(root.dataset.opens) });
    } else if (painted === ticket && state === 'waiting') {
      renderWaiting({ ticketId: ticket, position: Number(root.dataset.position), awayAhead: Number(root.dataset.awayAhead) || undefined, etaSeconds: Number(root.dataset.eta), paused: root.dataset.paused === 'true' ? 'paused' : undefined, fromPaint: true });
    } else if (painted === ticket && state === 'admitted') {
      renderAdmitted({ ticketId: ticket, expiresInSeconds: Number(root.dataset.expires) });
    } else if (painted === ticket && (state === 'unknown' || state === 'lost')) {
      finish(state);
      return;
    } else if (painted === ticket && (state === 'closed' || state === 'ended')) {
      // Painted with its reason already: nothing to follow.
      setState(state);
      return;
    } else {
      setState('joining');
    }
    follow(startTransport);
  }

  start();
})();
