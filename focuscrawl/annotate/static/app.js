// Hotkeys of the annotation page (as in the thesis's tool): digits 1-5 choose the image
// topic, arrow keys the text relation (up describes, down fits, left irrelevant, right
// misleading), Enter submits when both are chosen.
(function () {
  "use strict";
  var form = document.getElementById("answer-form");
  if (!form) { return; }
  var arrows = {ArrowUp: 0, ArrowDown: 1, ArrowLeft: 2, ArrowRight: 3};
  function choose(name, value) {
    var input = form.querySelector('input[name="' + name + '"][value="' + value + '"]');
    if (input) { input.checked = true; input.closest("fieldset").classList.remove("missing"); }
  }
  function chosen(name) { return form.querySelector('input[name="' + name + '"]:checked'); }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.altKey || event.metaKey) { return; }
    var digit = /^Digit([1-5])$|^Numpad([1-5])$/.exec(event.code);
    var key = digit ? Number(digit[1] || digit[2]) : (/^[1-5]$/.test(event.key) ? Number(event.key) : 0);
    if (key) { choose("image", key - 1); event.preventDefault(); return; }
    if (event.key in arrows) { choose("text", arrows[event.key]); event.preventDefault(); return; }
    if (event.key === "Enter") {
      event.preventDefault();
      var missing = false;
      ["image", "text"].forEach(function (name) {
        if (!chosen(name)) {
          missing = true;
          form.querySelector('input[name="' + name + '"]').closest("fieldset").classList.add("missing");
        }
      });
      if (!missing && !form.dataset.sent) { form.dataset.sent = "1"; HTMLFormElement.prototype.submit.call(form); }
    }
  });
  form.addEventListener("submit", function () { form.dataset.sent = "1"; });
})();
