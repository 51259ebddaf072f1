/* A session's board, for a manager: drag a queued card onto another to put it just before
   that one, onto the end of a column to send it to the back, or onto "Discard" (a reason is
   asked first). The keyboard does the same: a focused card moves one place with Alt+Up or
   Alt+Down. Each move is one POST to the board's move URL; live.js brings the new order. */
(function () {
  "use strict";
  var board = document.getElementById("np-board");
  if (!board) return;
  var moveUrl = board.getAttribute("data-move-url");
  var status = document.getElementById("np-board-status");
  var dialog = document.getElementById("np-discard-dialog");
  var dragged = null;

  function csrf() {
    var field = document.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function say(text) { if (status) status.textContent = text; }

  function changed() { document.dispatchEvent(new Event("np-live-changed")); }

  function move(planId, fields) {
    changed();
    var body = new URLSearchParams({ plan_id: planId });
    Object.keys(fields).forEach(function (k) { body.append(k, fields[k]); });
    return fetch(moveUrl, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrf(), "Accept": "application/json" }
    }).then(function (r) { return r.json(); })
      .then(function (answer) { changed(); say(answer.message); return answer.ok; })
      .catch(function () { say("The move could not be sent; try again."); return false; });
  }

  function target(fields) {
    return fields === "back" ? { position: "back" } : { before: fields };
  }

  board.addEventListener("dragstart", function (e) {
    var card = e.target.closest && e.target.closest("[data-plan][draggable=true]");
    if (!card) return;
    dragged = card.getAttribute("data-plan");
    e.dataTransfer.setData("text/plain", dragged);
    e.dataTransfer.effectAllowed = "move";
  });

  function dropTarget(el) {
    return el.closest && (el.closest("[data-plan][draggable=true]") || el.closest("[data-drop]"));
  }

  board.addEventListener("dragover", function (e) {
    if (dragged && dropTarget(e.target)) e.preventDefault();
  });

  board.addEventListener("drop", function (e) {
    var spot = dropTarget(e.target);
    var planId = dragged || e.dataTransfer.getData("text/plain");
    dragged = null;
    if (!spot || !planId) return;
    e.preventDefault();
    var drop = spot.getAttribute("data-drop");
    if (drop === "discard") {
      document.getElementById("np-discard-plan").value = planId;
      document.getElementById("np-discard-name").textContent = planId;
      dialog.showModal();
      document.getElementById("np-discard-reason").focus();
    } else if (drop === "back") {
      move(planId, { position: "back" });
    } else {
      var before = spot.getAttribute("data-plan");
      if (before !== planId) move(planId, { before: before });
    }
  });

  function cardNear(card, before) {
    var next = before ? card.previousElementSibling : card.nextElementSibling;
    return next && next.hasAttribute("data-plan") ? next : null;
  }

  board.addEventListener("keydown", function (e) {
    if (!e.altKey || (e.key !== "ArrowUp" && e.key !== "ArrowDown")) return;
    var card = e.target.closest && e.target.closest("[data-plan][draggable=true]");
    if (!card) return;
    e.preventDefault();
    // The neighbours are read from the column's order on the page, which is as stored or
    // ahead of it; a card's data-up, data-down and data-after (where it goes beyond its
    // column) may lag, as live.js leaves a card in use (focused) as it is.
    var up = e.key === "ArrowUp";
    var sibling = cardNear(card, up);
    var beyond = sibling && !up ? cardNear(sibling, false) : null;
    var to = up
      ? (sibling ? sibling.getAttribute("data-plan") : card.getAttribute("data-up"))
      : (beyond ? beyond.getAttribute("data-plan") : (sibling || card).getAttribute(sibling ? "data-after" : "data-down"));
    if (!to) return;
    move(card.getAttribute("data-plan"), target(to)).then(function (ok) {
      if (!ok) return;
      // Moved here at once, so the card keeps the focus for the next step; the next poll
      // brings the order as stored.
      if (sibling) card.parentNode.insertBefore(card, up ? sibling : sibling.nextSibling);
      card.focus();
    });
  });

  if (dialog) {
    document.getElementById("np-discard-cancel").addEventListener("click", function () { dialog.close(); });
  }
})();
