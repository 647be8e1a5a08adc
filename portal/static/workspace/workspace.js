// The workspace's small behaviours that need no server round trip.
"use strict";

// A form with data-confirm asks before it is sent (deletions).
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
  }
});

// A page that shows a passage (a search hit or a footnote opened at its page) scrolls to it and
// gives it the focus, so keyboard and screen-reader users land on it too.
document.addEventListener("DOMContentLoaded", () => {
  const passage = document.getElementById("passage");
  if (passage) {
    passage.scrollIntoView({ block: "center" });
    passage.focus({ preventScroll: true });
  }
  const results = document.getElementById("results-heading");
  if (results) results.focus();
});
