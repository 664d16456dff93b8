/* The language switch keeps the reader's place (book/_ext/language_switch.py). Both editions
 * give a section the same id, so the link to the other edition's page gets the section the
 * reader is at: the address's own #section, else the last section whose heading the reader
 * has scrolled past. On the search page it keeps the query (?q=...). Without JavaScript the
 * link opens the top of the page. */
(function () {
  "use strict";

  function section() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (id && document.getElementById(id)) return location.hash;
    if (window.scrollY < 100) return "";
    var passed = "";
    var sections = document.querySelectorAll("article.bd-article section[id]");
    for (var i = 0; i < sections.length; i++) {
      if (sections[i].getBoundingClientRect().top > 120) break;
      passed = "#" + encodeURIComponent(sections[i].id);
    }
    return passed;
  }

  function update(event) {
    var link = event.target.closest && event.target.closest("nav.edition-switch a");
    if (!link) return;
    if (!link.dataset.page) link.dataset.page = link.getAttribute("href");
    var search = document.getElementById("search-results") ? location.search : "";
    link.setAttribute("href", link.dataset.page + search + section());
  }

  // before the link is followed, opened in a new tab (middle button) or copied (menu)
  ["pointerdown", "focusin", "click"].forEach(function (type) {
    document.addEventListener(type, update, true);
  });
})();
