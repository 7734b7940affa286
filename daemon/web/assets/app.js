// agentd web console: follows the page's event stream (Server-Sent Events) and puts the
// server-rendered fragments it carries into the page. The fragments are html/template
// output from the daemon, never model text assembled here.
"use strict";
(function () {
  function parse(html) {
    var t = document.createElement("template");
    t.innerHTML = html.trim();
    return t.content.firstElementChild;
  }

  // Feedback and answers are capped in bytes by the daemon; maxlength counts characters,
  // so say so before the person sends more than it takes.
  function watchBytes(root) {
    root.querySelectorAll("textarea[data-max-bytes]").forEach(function (ta) {
      var max = +ta.dataset.maxBytes, note = ta.parentElement.querySelector(".bytes"), form = ta.form;
      ta.addEventListener("input", function () {
        var n = new TextEncoder().encode(ta.value).length;
        var over = n > max;
        note.textContent = over ? n + " bytes: the limit is " + max + " bytes; shorten it before sending" : "";
        note.classList.toggle("over", over);
        form.querySelectorAll("button").forEach(function (b) { if (b.value !== "approve" && b.value !== "deny") b.disabled = over; });
      });
    });
  }

  // The approve ×N button sends the count; the plain approve button sends none.
  function wireDecide(root) {
    root.querySelectorAll("form.decide").forEach(function (f) {
      f.addEventListener("submit", function (e) {
        var count = f.querySelector("#count");
        if (e.submitter && e.submitter.id !== "approve-n") count.disabled = true;
      });
    });
  }

  // A cron spec is checked as it is typed, by the daemon's own parser: the answer is a
  // server-rendered fragment with the next fire times or what is wrong.
  function watchSpec(root) {
    var spec = root.querySelector("input[data-check]");
    if (!spec) return;
    var zone = spec.form.querySelector("[name=time_zone]"), out = document.getElementById("spec-check"), timer, asked = 0;
    function check() {
      var n = ++asked;
      var q = "?spec=" + encodeURIComponent(spec.value) + "&time_zone=" + encodeURIComponent(zone.value);
      fetch(spec.dataset.check + q, {credentials: "same-origin"}).then(function (r) { return r.text(); }).then(function (html) {
        if (n === asked) out.innerHTML = html;
      });
    }
    [spec, zone].forEach(function (el) {
      el.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(check, 150); });
    });
  }

  // The wake conditions are checked as they are typed, by the same endpoint and the
  // daemon's own check of their form.
  function watchWhen(root) {
    var set = root.querySelector("fieldset[data-check]");
    if (!set) return;
    var out = document.getElementById("when-check"), timer, asked = 0;
    function check() {
      var n = ++asked, q = "";
      set.querySelectorAll("[name]").forEach(function (el) {
        if (el.type !== "checkbox" || el.checked) q += "&" + el.name + "=" + encodeURIComponent(el.value);
      });
      fetch(set.dataset.check + q, {credentials: "same-origin"}).then(function (r) { return r.text(); }).then(function (html) {
        if (n === asked) out.innerHTML = html;
      });
    }
    set.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(check, 150); });
    set.addEventListener("change", function () { clearTimeout(timer); timer = setTimeout(check, 150); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    watchBytes(document);
    wireDecide(document);
    watchSpec(document);
    watchWhen(document);
    var src = document.body.dataset.events;
    if (!src || !window.EventSource) return;
    var live = document.getElementById("live");
    var last = 0; // the newest seq shown: a resent event is not shown twice
    var es = new EventSource(src);
    es.onopen = function () { live.textContent = "live"; };
    es.onerror = function () {
      live.textContent = es.readyState === EventSource.CLOSED ? "not live: reload the page" : "reconnecting…";
    };
    // The session ended (logged out here or in another tab, expired, or ended by the
    // daemon): the page stops following; nothing more arrives.
    es.addEventListener("loggedout", function () {
      es.close();
      live.textContent = "logged out: run agentctl web to log in again";
      document.body.dataset.loggedOut = "true";
    });
    function fresh(e) {
      var seq = +e.lastEventId;
      if (seq && seq <= last) return false;
      if (seq) last = seq;
      return true;
    }
    // A row on this page is replaced; an agent not on it is new, and belongs at the end of
    // the list, so only the last page adds it.
    es.addEventListener("row", function (e) {
      if (!fresh(e)) return;
      var row = parse(e.data), old = document.getElementById(row.id);
      var body = document.querySelector("#agents tbody");
      if (old) { old.replaceWith(row); } else if (body && body.dataset.last) {
        var empty = body.querySelector(".empty"); if (empty) empty.remove();
        body.append(row);
      }
      document.body.dataset.seq = last;
    });
    es.addEventListener("seen", function (e) { fresh(e); });
    // The daemon no longer holds what this page missed while away: read the page again.
    es.addEventListener("reload", function () { es.close(); location.reload(); });
    es.addEventListener("removed", function (e) {
      if (!fresh(e)) return;
      var row = document.getElementById(e.data); if (row) row.remove();
    });
    es.addEventListener("waiting", function (e) {
      var next = parse(e.data), cur = document.getElementById("waiting");
      // Keep what the person is typing until what waits changes.
      if (cur && cur.dataset.key !== next.dataset.key) {
        cur.replaceWith(next); watchBytes(next); wireDecide(next);
      }
    });
    es.addEventListener("head", function (e) {
      var cur = document.getElementById("head"); if (cur) cur.replaceWith(parse(e.data));
    });
    es.addEventListener("event", function (e) {
      if (!fresh(e)) return;
      var list = document.getElementById("stream");
      if (list) list.append(parse(e.data));
      document.body.dataset.seq = last;
    });
  });
})();
