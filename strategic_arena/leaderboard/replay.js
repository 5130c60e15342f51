// Replay viewer: steps through the games embedded in the page as JSON (#replay-data), whose
// boards were drawn when the page was published. Sets text only (textContent), never markup;
// no dependencies, no network. Without JavaScript the Replays tab lists the games.
"use strict";
(() => {
  const source = document.getElementById("replay-data");
  const viewer = document.getElementById("replay-viewer");
  if (source === null || viewer === null) {
    return;
  }
  const replays = JSON.parse(source.textContent);
  const games = replays.games;
  const byId = (id) => document.getElementById(id);
  const pick = byId("replay-pick");
  const panel = byId("panel-replays");
  let game = null;
  let step = 0;

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) {
      node.className = className;
    }
    if (text !== undefined) {
      node.textContent = text;
    }
    return node;
  }

  function seatName(seat) {
    return `seat ${seat} (${game.players[seat]})`;
  }

  // A grid game's board: a cell per character of the rules engine's rows ("." empty, "x", "o");
  // the cell the last move changed is marked.
  function grid(rows, before) {
    const table = element("table", "replay-grid");
    table.setAttribute("aria-label", "board");
    const head = table.createTHead().insertRow();
    if (game.numbered_rows) {
      head.appendChild(element("th", "", ""));
    }
    for (let column = 0; column < rows[0].length; column += 1) {
      head.appendChild(element("th", "", String(column)));
    }
    const body = table.createTBody();
    rows.forEach((row, r) => {
      const line = body.insertRow();
      if (game.numbered_rows) {
        line.appendChild(element("th", "", String(r)));
      }
      Array.from(row).forEach((mark, c) => {
        const cell = line.insertCell();
        cell.className = mark === "x" ? "cell-x" : mark === "o" ? "cell-o" : "cell-empty";
        cell.textContent = mark === "." ? "" : mark.toUpperCase();
        cell.dataset.mark = mark;
        if (before !== null && before[r] !== undefined && before[r][c] !== mark) {
          cell.classList.add("last");
        }
      });
    });
    return table;
  }

  // Any other game's board: what each seat sees, in the prompts' words.
  function views(list) {
    const box = document.createDocumentFragment();
    for (const view of list) {
      box.appendChild(element("h4", "", view.label));
      box.appendChild(element("pre", "board-text", view.text));
    }
    return box;
  }

  function showText(id, text) {
    const node = byId(id);
    node.textContent = text;
    node.hidden = text === "";
  }

  function cutNote(answer) {
    return answer.cut ? `(cut: the first ${replays.text_limit} of ${answer.chars} characters)` : "";
  }

  function describe(move) {
    const answer = byId("replay-answer");
    const thinking = byId("replay-thinking");
    if (move === null) {
      showText("replay-move", "The start: no move yet.");
      showText("replay-grade", "");
      showText("replay-error", "");
      answer.hidden = true;
      thinking.hidden = true;
      return;
    }
    const played = move.text === null ? "made no legal move" : `played ${move.text}`;
    const tries = move.attempts > 1 ? ` after ${move.attempts} answers` : "";
    showText("replay-move", `Move ${step}: ${seatName(move.seat)} ${played}${tries}.`);
    showText("replay-grade", move.grade ? `Grade: ${move.grade.label} (${move.grade.detail})` : "");
    showText("replay-error", move.error ? `Invalid answer: ${move.error}` : "");
    answer.hidden = false;
    byId("replay-response").textContent = move.response.text;
    showText("replay-response-cut", cutNote(move.response));
    thinking.hidden = move.reasoning === null;
    if (move.reasoning !== null) {
      byId("replay-reasoning").textContent = move.reasoning.text;
      showText("replay-reasoning-cut", cutNote(move.reasoning));
    }
  }

  function transcript() {
    const list = byId("replay-transcript");
    list.replaceChildren();
    for (let index = 1; index <= step; index += 1) {
      const move = game.steps[index].move;
      const text = move.text === null ? "(no legal move)" : move.text;
      const item = element("li", index === step ? "current" : "", `${seatName(move.seat)}: ${text}`);
      list.appendChild(item);
    }
  }

  function show() {
    const last = game.steps.length - 1;
    const frame = game.steps[step];
    byId("replay-step").textContent =
      step === 0 ? `Move 0 of ${last} (the start)` : `Move ${step} of ${last}`;
    const before = step > 0 && frame.board.grid ? game.steps[step - 1].board.grid : null;
    byId("replay-board").replaceChildren(
      frame.board.grid ? grid(frame.board.grid, before) : views(frame.board.views),
    );
    describe(frame.move);
    transcript();
    byId("replay-first").disabled = step === 0;
    byId("replay-back").disabled = step === 0;
    byId("replay-forward").disabled = step === last;
    byId("replay-last").disabled = step === last;
  }

  function go(target) {
    if (game !== null) {
      step = Math.max(0, Math.min(game.steps.length - 1, target));
      show();
    }
  }

  function open(index) {
    if (!Number.isInteger(index) || index < 0 || index >= games.length) {
      return false;
    }
    game = games[index];
    step = 0;
    pick.value = String(index);
    const seats = game.players.map((name, seat) => `${name} (seat ${seat})`);
    byId("replay-title").textContent = `${game.title}: ${seats.join(" vs ")}`;
    byId("replay-result").textContent = `${game.run} / ${game.game_key} · ${game.result}`;
    show();
    return true;
  }

  // "#replay-N" opens game N in the viewer and shows it (the Replays tab, scrolled to it).
  function follow(hash) {
    const match = /^#replay-(\d+)$/.exec(hash);
    if (match === null || !open(Number(match[1]))) {
      return false;
    }
    const tab = byId("tab-replays");
    if (tab !== null) {
      tab.click();
    }
    viewer.scrollIntoView();
    return true;
  }

  byId("replay-first").addEventListener("click", () => go(0));
  byId("replay-back").addEventListener("click", () => go(step - 1));
  byId("replay-forward").addEventListener("click", () => go(step + 1));
  byId("replay-last").addEventListener("click", () => go(Infinity));
  pick.addEventListener("change", () => open(Number(pick.value)));
  window.addEventListener("hashchange", () => follow(window.location.hash));
  // A second click on the same link changes no hash: follow it on click as well.
  for (const link of document.querySelectorAll('a[href^="#replay-"]')) {
    link.addEventListener("click", () => follow(link.getAttribute("href")));
  }
  // The arrow keys step while the Replays tab shows (not on the tabs, which they switch, nor
  // in the game picker, whose own keys they are).
  document.addEventListener("keydown", (event) => {
    if (game === null || panel === null || panel.hidden || event.defaultPrevented) {
      return;
    }
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) {
      return;
    }
    if (event.target instanceof Element && event.target.closest('[role="tab"], select, input')) {
      return;
    }
    const last = game.steps.length - 1;
    const target = { ArrowLeft: step - 1, ArrowRight: step + 1, Home: 0, End: last }[event.key];
    if (target !== undefined) {
      event.preventDefault();
      go(target);
    }
  });

  viewer.hidden = false;
  byId("replay-nojs").hidden = true;
  if (!follow(window.location.hash)) {
    open(0);
  }
})();
