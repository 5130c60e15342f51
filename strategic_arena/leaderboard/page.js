// Leaderboard page behaviour: tabs and sortable tables. No dependencies, no network.
// Without JavaScript every panel shows one after the other and tables keep their ranking order.
"use strict";
(() => {
  const tabs = Array.from(document.querySelectorAll('[role="tab"]'));

  function select(tab, focus) {
    for (const other of tabs) {
      const selected = other === tab;
      other.setAttribute("aria-selected", String(selected));
      other.tabIndex = selected ? 0 : -1;
      document.getElementById(other.getAttribute("aria-controls")).hidden = !selected;
    }
    if (focus) {
      tab.focus();
    }
  }

  tabs.forEach((tab, index) => {
    tab.addEventListener("click", () => select(tab, false));
    tab.addEventListener("keydown", (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (step !== undefined) {
        event.preventDefault();
        select(tabs[(index + step + tabs.length) % tabs.length], true);
      } else if (event.key === "Home" || event.key === "End") {
        event.preventDefault();
        select(tabs[event.key === "Home" ? 0 : tabs.length - 1], true);
      }
    });
  });
  // A link to "#id" opens the tab whose panel holds that element, then shows it.
  function follow(hash) {
    const target = hash.length > 1 ? document.getElementById(hash.slice(1)) : null;
    const tab = target
      ? tabs.find(
          (candidate) =>
            candidate === target ||
            document.getElementById(candidate.getAttribute("aria-controls")).contains(target),
        )
      : undefined;
    if (tab === undefined) {
      return false;
    }
    select(tab, false);
    if (target !== tab) {
      target.scrollIntoView();
    }
    return true;
  }

  if (tabs.length > 0 && !follow(window.location.hash)) {
    select(tabs[0], false);
  }
  window.addEventListener("hashchange", () => follow(window.location.hash));
  // A second click on the same link changes no hash: follow it on click as well.
  for (const link of document.querySelectorAll('a[href^="#"]')) {
    link.addEventListener("click", () => follow(link.getAttribute("href")));
  }

  // A cell sorts by its data-sort value when it has one (numbers; "" = missing), else by text.
  function sortKey(cell) {
    const raw = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
    const number = Number(raw);
    if (raw === "") {
      return { missing: true, number: NaN, text: "" };
    }
    return { missing: false, number: number, text: raw.toLowerCase() };
  }

  function compare(a, b) {
    if (!Number.isNaN(a.number) && !Number.isNaN(b.number)) {
      return a.number - b.number;
    }
    return a.text < b.text ? -1 : a.text > b.text ? 1 : 0;
  }

  function sortTable(table, column) {
    const header = table.tHead.rows[0].cells[column];
    const current = header.getAttribute("aria-sort");
    const first = header.dataset.first === "descending" ? "descending" : "ascending";
    const order =
      current === null || current === "none"
        ? first
        : current === "ascending"
          ? "descending"
          : "ascending";
    for (const cell of table.tHead.rows[0].cells) {
      cell.setAttribute("aria-sort", "none");
    }
    header.setAttribute("aria-sort", order);
    const sign = order === "ascending" ? 1 : -1;
    const body = table.tBodies[0];
    const rows = Array.from(body.rows).map((row, index) => ({
      row: row,
      index: index,
      key: sortKey(row.cells[column]),
    }));
    rows.sort((a, b) => {
      if (a.key.missing !== b.key.missing) {
        return a.key.missing ? 1 : -1; // missing values last in either order
      }
      return sign * compare(a.key, b.key) || a.index - b.index;
    });
    for (const entry of rows) {
      body.appendChild(entry.row);
    }
  }

  for (const table of document.querySelectorAll("table.sortable")) {
    Array.from(table.tHead.rows[0].cells).forEach((header, column) => {
      const button = header.querySelector("button");
      if (button) {
        button.addEventListener("click", () => sortTable(table, column));
      }
    });
  }
})();
