// Root dashboard: the little the pages need from a script. Everything
// works without it except the live admin chat stream.
"use strict";

// <form data-confirm="..."> asks before it submits (deletes, revocations).
document.addEventListener("submit", (ev) => {
  const form = ev.target;
  const question = form.getAttribute && form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    ev.preventDefault();
  }
});
