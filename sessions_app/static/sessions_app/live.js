/* Live pages (docs/design.md, "The edges"): every second (less often when hidden, when slow,
   or when the server's Poll-After says so), ask the page's live endpoint whether anything changed (If-None-Match: a 304 costs one query beyond the sign-in), and on a change put
   the new parts in place. A part's children carry data-key: a child that is unchanged, or
   that the reviewer is typing in, stays as it is; only the others are replaced. */
(function () {
  "use strict";
  var marker = document.getElementById("np-live");
  if (!marker || !window.fetch) return;
  var url = marker.getAttribute("data-url");
  var etag = null;
  var PERIOD = 1000;
  // A page in a hidden tab, or one whose server answers slowly, asks less often: many open
  // pages then back off instead of queueing ever more polls on a busy server.
  var HIDDEN_PERIOD = 10000;
  var SLOWEST_PERIOD = 10000;
  // Who this page is, so the server can count its open pages and pace them (Poll-After).
  var page = Array.prototype.map.call(window.crypto.getRandomValues(new Uint8Array(12)), function (b) {
    return ("0" + b.toString(16)).slice(-2);
  }).join("");
  var asked = PERIOD;
  // A page that changes itself (the board's moves) says so with an "np-live-changed" event:
  // an answer to a poll sent before then may predate the change, and is dropped.
  var generation = 0;
  document.addEventListener("np-live-changed", function () { generation++; });

  function comparable(el) {
    var copy = el.cloneNode(true);
    // A CSRF token is masked afresh on every render: it is no change.
    copy.querySelectorAll("input[name=csrfmiddlewaretoken]").forEach(function (i) { i.removeAttribute("value"); });
    return copy.outerHTML;
  }

  function busy(el) {
    var active = document.activeElement;
    if (active && active !== document.body && el.contains(active)) return true;
    var fields = el.querySelectorAll("textarea, input[type=text], select");
    for (var i = 0; i < fields.length; i++) {
      var f = fields[i];
      if (f.tagName === "SELECT") { if (f.selectedIndex > 0) return true; }
      else if (f.value !== f.defaultValue) return true;
    }
    return false;
  }

  function update(container, html) {
    var focused = document.activeElement;
    var template = document.createElement("template");
    template.innerHTML = html;
    var fresh = Array.prototype.slice.call(template.content.children);
    var old = {};
    Array.prototype.forEach.call(container.children, function (c) {
      old[c.getAttribute("data-key") || "\u0000" + comparable(c)] = c;
    });
    var kept = new Set();
    var at = null;
    fresh.forEach(function (f) {
      var key = f.getAttribute("data-key") || "\u0000" + comparable(f);
      var was = old[key];
      var node = was && (busy(was) || comparable(was) === comparable(f)) ? was : f;
      kept.add(node);
      var ref = at ? at.nextSibling : container.firstChild;
      if (node !== ref) container.insertBefore(node, ref);
      if (was && node !== was && !busy(was)) was.remove();
      at = node;
    });
    Array.prototype.slice.call(container.children).forEach(function (c) {
      if (!kept.has(c) && !busy(c)) c.remove();
    });
    // Moving an element in the page takes the focus from it: given back.
    if (focused && focused !== document.activeElement && container.contains(focused)) focused.focus();
  }

  function apply(data) {
    Object.keys(data.parts || {}).forEach(function (name) {
      var container = document.querySelector('[data-live-part="' + name + '"]');
      if (container) update(container, data.parts[name]);
    });
    Object.keys(data.counts || {}).forEach(function (name) {
      document.querySelectorAll('[data-live-count="' + name + '"]').forEach(function (el) {
        if (el.textContent !== String(data.counts[name])) el.textContent = data.counts[name];
      });
    });
  }

  function next(started) {
    if (document.hidden) return HIDDEN_PERIOD;
    return Math.min(SLOWEST_PERIOD, Math.max(PERIOD, asked, 2 * (Date.now() - started)));
  }

  function poll() {
    var headers = { "Accept": "application/json", "Live-Page": page };
    if (etag) headers["If-None-Match"] = etag;
    var started = Date.now();
    var sent = generation;
    timer = null;
    fetch(url, { headers: headers, cache: "no-store", credentials: "same-origin" })
      .then(function (response) {
        var after = parseFloat(response.headers.get("Poll-After"));
        asked = isFinite(after) ? after * 1000 : PERIOD;
        if (response.status === 200 && sent === generation) {
          etag = response.headers.get("ETag");
          return response.json().then(apply);
        }
      })
      .catch(function () {})
      .then(function () { timer = setTimeout(poll, next(started)); });
  }
  var timer = setTimeout(poll, PERIOD);
  // Back in view, a page waiting out its hidden period asks at once.
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && timer !== null) { clearTimeout(timer); timer = null; poll(); }
  });
})();
