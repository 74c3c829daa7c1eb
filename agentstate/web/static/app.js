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
  // "What the model saw": the previews are assembled while the page is already shown.
  for (const slot of document.querySelectorAll("[data-fragment]")) {
    loadFragment(slot);
  }
});

// Fetch a slot's HTML fragment and put it in place. A locked store (503) is retried, as the
// whole pages retry themselves; another failure shows the error page's message.
function loadFragment(slot) {
  fetch(slot.dataset.fragment, {credentials: "same-origin"})
    .then((response) => response.text().then((body) => {
      if (response.status === 503) {
        window.setTimeout(() => loadFragment(slot), 2000);
        return;
      }
      if (!response.ok) {
        const page = new DOMParser().parseFromString(body, "text/html");
        const message = page.querySelector("main");
        slot.replaceChildren(...(message ? message.childNodes : [document.createTextNode(
          "could not assemble it (HTTP " + response.status + ")")]));
        slot.dataset.state = "failed";
        return;
      }
      slot.innerHTML = body;
      slot.dataset.state = "ready";
    }))
    .catch((error) => {
      slot.dataset.state = "failed";
      slot.textContent = "could not reach the ui server: " + error;
    });
}
