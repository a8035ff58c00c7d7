// ltm inspector: the few things plain HTML cannot do. No framework, nothing fetched from elsewhere.
document.addEventListener("DOMContentLoaded", () => {
  // Switching the search mode re-runs the search at once.
  for (const radio of document.querySelectorAll("input.auto-submit")) {
    radio.addEventListener("change", () => { if (document.getElementById("query").value.trim()) radio.form.submit(); });
  }
  // Ask before rejecting a change.
  for (const button of document.querySelectorAll("button[data-confirm]")) {
    button.addEventListener("click", (event) => { if (!window.confirm(button.dataset.confirm)) event.preventDefault(); });
  }
  // Show stored unix times in the reader's local time.
  for (const cell of document.querySelectorAll("td[data-ts]")) {
    const when = new Date(parseFloat(cell.dataset.ts) * 1000);
    cell.textContent = when.toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" });
  }
});
