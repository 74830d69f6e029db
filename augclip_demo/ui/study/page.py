"""The rater page: static HTML, CSS and script (no framework), served by :mod:`augclip_demo.ui.study.routes`.

The rater's token travels in the link's fragment (``/study/rate#t=TOKEN``): browsers never send a
fragment to the server, so it stays out of access logs and Referer headers; the script sends it in
an ``Authorization`` header and fetches the pictures with it. The page shows the study's question(s),
the text, the source and the edit(s), and the rater's progress: never a metric or another rater's answer.
Keys: left arrow / right arrow / down arrow (or T) for left / right / tie; 1-5 for ratings.
"""

from __future__ import annotations

PAGE_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Rating study</title>
<link rel="stylesheet" href="/study/rate.css">
</head><body>
<main id="study">
  <header><h1 id="title">Rating study</h1><span id="progress" aria-live="polite"></span></header>
  <p id="message" role="status"></p>
  <section id="task" hidden>
    <p class="label">Text</p><p id="text"></p>
    <div class="pictures">
      <figure class="source"><img id="img-source" alt="original picture"><figcaption>Original</figcaption></figure>
      <div class="edits" id="edits"></div>
    </div>
    <div id="questions"></div>
    <p class="keys" id="keys"></p>
  </section>
</main>
<script src="/study/rate.js"></script>
</body></html>
"""

PAGE_CSS = """
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.4 system-ui, sans-serif; background: #fafafa; color: #222; }
main { max-width: 1100px; margin: 0 auto; padding: 8px 12px 24px; }
header { display: flex; justify-content: space-between; align-items: baseline; gap: 8px; }
h1 { font-size: 1.2rem; margin: 4px 0; }
#progress { font-weight: 600; white-space: nowrap; }
#message { min-height: 1.4em; color: #a40000; margin: 4px 0; }
#message.done { color: #1b5e20; font-size: 1.2rem; }
.label { margin: 4px 0 0; font-size: .8rem; text-transform: uppercase; color: #666; }
#text { font-size: 1.15rem; font-weight: 600; margin: 0 0 8px; }
.pictures { display: flex; flex-direction: column; gap: 8px; }
figure { margin: 0; background: #fff; border: 1px solid #ddd; border-radius: 8px; padding: 4px; text-align: center; }
figure img { width: 100%; height: auto; max-height: 42vh; object-fit: contain; display: block; }
figcaption { font-size: .9rem; color: #444; }
.source img { max-height: 28vh; }
.edits { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
.edits.single { grid-template-columns: 1fr; }
@media (min-width: 900px) {
  .pictures { flex-direction: row; }
  .pictures > .source { flex: 1; }
  .pictures > .edits { flex: 2; }
  .source img { max-height: 48vh; }
  figure img { max-height: 48vh; }
}
.question { margin: 12px 0; padding: 8px; border-radius: 8px; border: 2px solid transparent; background: #fff; }
.question.active { border-color: #3557c5; }
.question p { margin: 0 0 8px; font-weight: 600; }
.choices { display: grid; grid-template-columns: repeat(var(--n), 1fr); gap: 8px; }
.choices button { min-height: 56px; font-size: 1.05rem; border-radius: 8px; border: 1px solid #888;
  background: #f1f3f8; color: #111; cursor: pointer; touch-action: manipulation; }
.choices button.chosen { background: #3557c5; color: #fff; border-color: #3557c5; }
.scale { display: flex; justify-content: space-between; font-size: .85rem; color: #555; margin-top: 4px; }
.keys { font-size: .85rem; color: #666; }
@media (hover: none) { .keys { display: none; } }
"""

PAGE_JS = r"""
(function () {
  "use strict";
  var token = new URLSearchParams(location.hash.slice(1)).get("t") || "";
  var state = { view: null, answers: {}, shownAt: 0, sending: false, urls: [] };
  var $ = function (id) { return document.getElementById(id); };

  function say(text, done) { var m = $("message"); m.textContent = text || ""; m.className = done ? "done" : ""; }

  function api(path, options) {
    options = options || {};
    options.headers = Object.assign({ "Authorization": "Bearer " + token }, options.headers || {});
    options.cache = "no-store";
    return fetch(path, options).then(function (response) {
      if (response.ok) { return response; }
      return response.json().catch(function () { return {}; }).then(function (body) {
        var error = new Error(body.error || ("the server answered " + response.status));
        // over the rate (429): the server says how long to wait; the page waits and tries again by itself
        if (response.status === 429) { error.retry = parseInt(response.headers.get("Retry-After") || "2", 10) || 2; }
        throw error;
      });
    });
  }

  function picture(img, position, slot) {
    return api("/study/api/image/" + position + "/" + slot).then(function (r) { return r.blob(); })
      .then(function (blob) {
        var url = URL.createObjectURL(blob); state.urls.push(url); img.src = url;
        // the task counts as shown (its answer time starts) once the picture can be painted, not when asked for
        return img.decode().catch(function () {});
      });
  }

  function choicesFor(view) {
    if (view.kind === "2afc") {
      return [["left", "\u25C0 Left"], ["tie", "Tie"], ["right", "Right \u25B6"]];
    }
    return [[1, "1"], [2, "2"], [3, "3"], [4, "4"], [5, "5"]];
  }

  function activeQuestion() {
    var qs = state.view.questions;
    for (var i = 0; i < qs.length; i++) { if (!(qs[i].id in state.answers)) { return qs[i].id; } }
    return null;
  }

  function mark() {
    var active = activeQuestion();
    document.querySelectorAll(".question").forEach(function (el) {
      el.classList.toggle("active", el.dataset.q === active);
      el.querySelectorAll("button").forEach(function (b) {
        b.classList.toggle("chosen", String(state.answers[el.dataset.q]) === b.dataset.v);
      });
    });
  }

  function choose(question, value) {
    // no answer before the task's pictures are shown: it would be blind, and its time would be wrong
    if (state.sending || !state.view || !state.view.task || !state.shownAt) { return; }
    state.answers[question] = value;
    mark();
    if (activeQuestion() === null) { send(); }
  }

  function render(view) {
    state.view = view; state.answers = {}; state.shownAt = 0;
    state.urls.forEach(function (u) { URL.revokeObjectURL(u); }); state.urls = [];
    $("title").textContent = view.title;
    $("progress").textContent = view.done + " / " + view.total;
    if (!view.task) {
      $("task").hidden = true;
      say(view.closed ? "This study is closed. Thank you!" : "All done. Thank you for your judgments!", true);
      return;
    }
    say("");
    var task = view.task;
    $("text").textContent = task.text;
    var edits = $("edits"); edits.innerHTML = ""; edits.className = "edits" + (task.slots.length === 1 ? " single" : "");
    var loads = [picture($("img-source"), task.position, "source")];
    task.slots.forEach(function (slot) {
      var fig = document.createElement("figure"); var img = document.createElement("img");
      img.id = "img-" + slot; img.alt = slot === "edit" ? "edited picture" : slot + " edit";
      var cap = document.createElement("figcaption");
      cap.textContent = slot === "edit" ? "Edit" : (slot === "left" ? "Left edit" : "Right edit");
      fig.appendChild(img); fig.appendChild(cap); edits.appendChild(fig);
      loads.push(picture(img, task.position, slot));
    });
    var box = $("questions"); box.innerHTML = "";
    var choices = choicesFor(view);
    view.questions.forEach(function (q) {
      var div = document.createElement("div"); div.className = "question"; div.dataset.q = q.id;
      var p = document.createElement("p"); p.textContent = q.prompt; div.appendChild(p);
      var row = document.createElement("div"); row.className = "choices"; row.style.setProperty("--n", choices.length);
      choices.forEach(function (c) {
        var b = document.createElement("button"); b.type = "button"; b.dataset.v = String(c[0]); b.textContent = c[1];
        b.id = "answer-" + q.id + "-" + c[0];
        b.addEventListener("click", function () { choose(q.id, c[0]); });
        row.appendChild(b);
      });
      div.appendChild(row);
      if (q.low || q.high) {
        var scale = document.createElement("div"); scale.className = "scale";
        var lo = document.createElement("span"); lo.textContent = q.low; var hi = document.createElement("span"); hi.textContent = q.high;
        scale.appendChild(lo); scale.appendChild(hi); div.appendChild(scale);
      }
      box.appendChild(div);
    });
    $("keys").textContent = view.kind === "2afc" ? "Keys: \u2190 left, \u2192 right, \u2193 or T tie" : "Keys: 1 to 5";
    $("task").hidden = false;
    mark();
    Promise.all(loads).then(function () { state.shownAt = Date.now(); document.body.dataset.position = task.position; })
      .catch(function (e) { say(e.message); });
  }

  function load() {
    if (!token) { say("This page needs your personal rating link (it ends in #t=...)."); return; }
    api("/study/api/task").then(function (r) { return r.json(); }).then(render).catch(function (e) {
      say(e.message);
      if (e.retry) { setTimeout(load, e.retry * 1000); }
    });
  }

  function send() {
    var task = state.view.task; state.sending = true;
    var elapsed = state.shownAt ? Date.now() - state.shownAt : null;
    api("/study/api/answer", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ position: task.position, answers: state.answers, elapsed_ms: elapsed }) })
      .then(function () { state.sending = false; load(); })
      .catch(function (e) {
        say(e.message);
        if (e.retry) { setTimeout(send, e.retry * 1000); return; }  // the answers are kept and sent again
        state.sending = false; state.answers = {}; mark();
      });
  }

  document.addEventListener("keydown", function (event) {
    if (!state.view || !state.view.task || event.ctrlKey || event.metaKey || event.altKey) { return; }
    var q = activeQuestion(); if (q === null) { return; }
    var key = event.key, value = null;
    if (state.view.kind === "2afc") {
      value = { ArrowLeft: "left", ArrowRight: "right", ArrowDown: "tie", t: "tie", T: "tie" }[key] || null;
    } else if (/^[1-5]$/.test(key)) { value = parseInt(key, 10); }
    if (value !== null) { event.preventDefault(); choose(q, value); }
  });
  load();
})();
"""
