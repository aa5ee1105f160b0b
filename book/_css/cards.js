// On a narrow screen, a table wider than its column becomes one card per row: each cell on its own line, headed by
// its column's name (from the table's header rows, pandas' two-row headers joined), so that no column hides
// off screen (the unseen-class columns of a results table, the glyph column of a findings table). Tables that fit
// stay tables; the verdict table has its own cards (book.css, .verdict-cards). Re-checked when the window changes
// and when a folded output opens (a table inside closed <details> has no width until then).
const NARROW = 640;

function columnNames(table) {
  const names = [];
  for (const row of table.tHead ? table.tHead.rows : []) {
    let column = 0;
    for (const cell of row.cells) {
      const text = cell.textContent.trim();
      for (let i = 0; i < cell.colSpan; i += 1, column += 1) {
        names[column] = [names[column], text].filter((part) => part).join(" ");
      }
    }
  }
  return names;
}

function label(table) {
  const names = columnNames(table);
  for (const body of table.tBodies) {
    for (const row of body.rows) {
      let column = 0;
      for (const cell of row.cells) {
        if (names[column] && column > 0) cell.dataset.label = names[column];
        column += cell.colSpan;
      }
    }
  }
}

function fit() {
  for (const table of document.querySelectorAll(".bd-article table")) {
    if (table.closest(".verdict-cards")) continue;
    table.classList.remove("dml-cards");
    if (window.innerWidth > NARROW || table.offsetParent === null) continue;
    if (table.scrollWidth > table.parentElement.clientWidth + 1) {
      label(table);
      table.classList.add("dml-cards");
    }
  }
}

window.addEventListener("DOMContentLoaded", fit);
window.addEventListener("resize", fit);
document.addEventListener("toggle", fit, true); // <details> do not bubble their toggle
