// agentstate ui: progressive enhancement only; every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // Filters apply as soon as a choice is made (the button stays for keyboards and no-JS).
  for (const form of document.querySelectorAll("form[data-autosubmit]")) {
    for (const select of form.querySelectorAll("select")) {
      select.addEventListener("change", () => form.submit());
    }
  }
  // The trace box goes straight to the ref's trace page.
  const trace = document.querySelector("form[data-trace]");
  if (trace) {
    trace.addEventListener("submit", (event) => {
      const ref = trace.elements.ref.value.trim();
      if (ref) {
        event.preventDefault();
        window.location.assign("/trace/" + encodeURIComponent(ref));
      }
    });
  }
});
