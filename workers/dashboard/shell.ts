// The dashboard's one HTML page. It carries no cluster data: until the client script finds a
// token in sessionStorage it is the login page; afterwards the script draws each view into it.

const NAV: Array<[string, string]> = [
  ["#/nodes", "Nodes"],
  ["#/namespaces", "Namespaces"],
  ["#/workloads", "Workloads"],
  ["#/pods", "Pods"],
  ["#/events", "Events"],
];

export function shellHtml(): string {
  const links = NAV.map(([href, label]) => `<li><a href="${href}">${label}</a></li>`).join("");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>edgeplane dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="app.css">
<script src="app.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <span class="brand">edgeplane</span>
  <nav id="nav" aria-label="Sections" hidden><ul>${links}</ul></nav>
  <div id="scope" class="scope" hidden>
    <label for="ns">Namespace</label>
    <input id="ns" list="ns-list" placeholder="all namespaces" autocomplete="off" spellcheck="false">
    <datalist id="ns-list"></datalist>
  </div>
  <span id="who" class="who"></span>
  <button id="logout" type="button" hidden>Sign out</button>
</header>
<main id="main" tabindex="-1">
  <section id="login" class="login" aria-labelledby="login-title">
    <h1 id="login-title">Sign in to edgeplane</h1>
    <p>Paste a bearer token, or a kubeconfig that holds one (<code>token:</code>). It stays in
    this browser tab only (sessionStorage) and is sent with each Kubernetes API request, so
    what you see is what your RBAC permissions allow.</p>
    <form id="login-form">
      <label for="token">Token or kubeconfig</label>
      <textarea id="token" name="token" rows="4" autocomplete="off" spellcheck="false" required></textarea>
      <button id="login-submit" type="submit">Sign in</button>
      <p id="login-error" class="error" role="alert"></p>
    </form>
    <noscript><p class="error">The dashboard needs JavaScript.</p></noscript>
  </section>
  <div id="view" hidden></div>
</main>
</body>
</html>
`;
}
