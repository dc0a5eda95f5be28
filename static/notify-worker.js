// The waiting page's service worker: it shows the "your turn" call a push brings (the
// server's JSON: {showId, ticketId, event: "soon" | "admitted", position, etaSeconds}), and
// a click on it opens the show's waiting page, which finds its place by its stored ticket.
'use strict';

self.addEventListener('push', (event) => {
  let call = {};
  try { call = event.data ? event.data.json() : {}; } catch { call = {}; }
  const show = typeof call.showId === 'string' ? call.showId : '';
  const soon = call.event === 'soon';
  const title = soon ? 'Your turn is near' : "It's your turn";
  const body = soon
    ? `You are number ${call.position} in the queue for ${show}: come back to the waiting page.`
    : `Come back to the waiting page for ${show} to buy your tickets.`;
  event.waitUntil(self.registration.showNotification(title, {
    body,
    tag: `waiting-room:${show}`,
    renotify: true,
    data: { url: `/wait/${encodeURIComponent(show)}` },
  }));
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const url = (event.notification.data && event.notification.data.url) || '/';
  event.waitUntil((async () => {
    const open = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
    for (const client of open) {
      if (new URL(client.url).pathname === url && 'focus' in client) return client.focus();
    }
    return self.clients.openWindow(url);
  })());
});
