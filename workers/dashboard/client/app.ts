// The client's shell: sign in (the token checked against the API before it is kept), sign
// out, the namespace scope, and the router that draws one view per URL fragment.
export const APP = String.raw`
var current = null; // the view's AbortController: leaving a view ends its watches

function $(id) { return document.getElementById(id); }

function showLogin(message) {
  if (current) { current.abort(); current = null; }
  $("login").hidden = false; $("view").hidden = true; $("nav").hidden = true;
  $("scope").hidden = true; $("logout").hidden = true; $("who").textContent = "";
  $("login-error").textContent = message || "";
  $("view").replaceChildren();
}

function signOut(err) {
  sessionStorage.removeItem(TOKEN_KEY);
  showLogin(err ? "Signed out: the token was not accepted (" + err.status + " " + err.reason + "): " + err.message : "");
}

/** Who the token belongs to (SelfSubjectReview); a 401 means the token is wrong. */
async function whoAmI(quiet401) {
  var r = await api("/apis/authentication.k8s.io/v1/selfsubjectreviews", {
    method: "POST", quiet401: quiet401, headers: { "content-type": "application/json" },
    body: JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" }),
  });
  return (r && r.status && r.status.userInfo) || {};
}

async function signIn(ev) {
  ev.preventDefault();
  var t = tokenFrom($("token").value);
  if (!t) { $("login-error").textContent = "That is not a token: paste a bearer token, or a kubeconfig with a token: line."; return; }
  $("login-submit").disabled = true;
  sessionStorage.setItem(TOKEN_KEY, t);
  try {
    var user = await whoAmI(true);
    $("token").value = "";
    enter(user, true);
  } catch (e) {
    sessionStorage.removeItem(TOKEN_KEY);
    $("login-error").textContent = e instanceof ApiError && e.status === 401
      ? "Sign-in failed: the server did not accept this token (401 Unauthorized). Check that it is complete and not expired."
      : "Sign-in failed: " + errorText(e);
  } finally {
    $("login-submit").disabled = false;
  }
}

function enter(user, signedInHere) {
  $("login").hidden = true; $("view").hidden = false; $("nav").hidden = false;
  // the form that held the keyboard focus is gone: it moves to the content it revealed
  if (signedInHere) $("main").focus();
  $("scope").hidden = false; $("logout").hidden = false; $("login-error").textContent = "";
  showWho(user);
  $("ns").value = namespace();
  if (!location.hash || location.hash === "#") location.replace("#/pods"); else route();
}

/** The namespace field's suggestions, listed when it first takes the focus (not at load). */
async function loadNamespaces() {
  $("ns").removeEventListener("focus", loadNamespaces);
  try {
    var list = await api("/api/v1/namespaces");
    $("ns-list").replaceChildren.apply($("ns-list"), list.items.map(function (n) { return h("option", { value: n.metadata.name }); }));
  } catch (e) { /* listing namespaces may be forbidden: the field still takes a typed name */ }
}

var VIEWS = {};

function route() {
  if (!token()) { showLogin(); return; }
  if (current) current.abort();
  current = new AbortController();
  var parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  var view = VIEWS[parts[0]] || VIEWS.pods;
  var section = parts[0] === "pod" ? "pods" : (VIEWS[parts[0]] ? parts[0] : "pods");
  document.querySelectorAll("#nav a").forEach(function (a) {
    if (a.getAttribute("href") === "#/" + section) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  });
  var root = $("view");
  root.replaceChildren();
  view(root, parts.slice(1), current.signal);
}

function start() {
  $("login-form").addEventListener("submit", signIn);
  $("logout").addEventListener("click", function () { signOut(null); });
  $("ns").addEventListener("focus", loadNamespaces);
  $("ns").addEventListener("change", function () {
    sessionStorage.setItem(NS_KEY, $("ns").value.trim());
    route();
  });
  window.addEventListener("hashchange", route);
  if (!token()) { showLogin(); return; }
  // draw at once; who the token belongs to fills in when the server says (a 401 signs out)
  enter(null);
  whoAmI(false).then(showWho, function () { /* a 401 signed out already; else the name stays unknown */ });
}

function showWho(user) {
  $("who").textContent = user && user.username ? "Signed in as " + user.username : "Signed in";
}
`;
