// The dashboard's only script: it listens to the server-sent events of
// /events and, for each changed policy, fetches its fragment and swaps it in.
// It builds no HTML from data: fragments come escaped from the server.
(function () {
  'use strict';
  var view = document.body.dataset.view;
  if (view !== 'overview' && view !== 'record') {
    return;
  }
  var live = document.getElementById('live');
  var selector = view === 'record' ? 'div.record' : 'article.policy';
  var pending = {};
  var connected = false;

  function setState(state, text) {
    if (live) {
      live.dataset.state = state;
      live.textContent = text;
    }
  }

  function find(space, name) {
    var nodes = document.querySelectorAll(selector);
    for (var i = 0; i < nodes.length; i++) {
      if (nodes[i].dataset.space === space && nodes[i].dataset.name === name) {
        return nodes[i];
      }
    }
    return null;
  }

  function section(space) {
    var nodes = document.querySelectorAll('section.space');
    for (var i = 0; i < nodes.length; i++) {
      if (nodes[i].dataset.space === space) {
        return nodes[i];
      }
    }
    return null;
  }

  function refresh(space, name) {
    var node = find(space, name);
    if (!node && (view === 'record' || !section(space))) {
      return;
    }
    var query = new URLSearchParams({space: space, name: name, view: view});
    fetch('/fragment?' + query.toString(), {credentials: 'same-origin'}).then(function (r) {
      if (r.status === 404) {
        if (node && view === 'overview') {
          node.remove();
        }
        return null;
      }
      return r.ok ? r.text() : null;
    }).then(function (html) {
      if (html === null) {
        return;
      }
      var t = document.createElement('template');
      t.innerHTML = html;
      var fresh = t.content.firstElementChild;
      if (!fresh) {
        return;
      }
      var current = find(space, name);
      if (current) {
        current.replaceWith(fresh);
      } else if (section(space)) {
        section(space).appendChild(fresh);
      }
    }).catch(function () {});
  }

  // Changes to one policy within 200ms make one fetch.
  function changed(space, name) {
    var key = JSON.stringify([space, name]);
    if (pending[key]) {
      return;
    }
    pending[key] = setTimeout(function () {
      delete pending[key];
      refresh(space, name);
    }, 200);
  }

  var source = new EventSource('/events');
  source.addEventListener('open', function () {
    // Changes missed while disconnected are caught up by a reload.
    if (connected) {
      window.location.reload();
      return;
    }
    connected = true;
    setState('live', 'live');
  });
  source.addEventListener('error', function () {
    setState('down', 'reconnecting…');
  });
  source.addEventListener('change', function (e) {
    var c;
    try {
      c = JSON.parse(e.data);
    } catch (err) {
      return;
    }
    if (typeof c.space === 'string' && typeof c.name === 'string') {
      changed(c.space, c.name);
    }
  });
})();
