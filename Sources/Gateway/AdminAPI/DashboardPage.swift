/// The live dashboard (`GET /dashboard` on the admin port): one page, its styles and script inline, so it
/// loads with no build step and no network beyond the gateway. It reads `/v1/live` (server-sent events,
/// read with `fetch` so that an admin token can go in a header) and looks up apns-ids and tokens with
/// `/v1/notifications/…` and `/v1/tokens/…`.
enum DashboardPage {
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Pushgate</title>
        <style>
          :root { --bg: #0f1419; --panel: #182028; --text: #e6e9ec; --dim: #8b96a1; --line: #26313c;
                  --alerting: #4aa3ff; --silent: #f2b84b; --other: #a78bfa;
                  --woken: #34c77b; --held: #f2b84b; --released: #4aa3ff; --coalesced: #a78bfa; --expired: #ef5f5f; }
          * { box-sizing: border-box; }
          body { margin: 0; font: 14px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--text); }
          header { display: flex; align-items: baseline; gap: 1rem; padding: 1rem 1.5rem; border-bottom: 1px solid var(--line); }
          header h1 { margin: 0; font-size: 1.2rem; }
          #status { color: var(--dim); }
          #status.live::before { content: "●"; color: var(--woken); margin-right: .3rem; }
          main { padding: 1rem 1.5rem; display: grid; gap: 1rem; }
          .tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); gap: .75rem; }
          .tile { background: var(--panel); border-radius: 8px; padding: .75rem 1rem; }
          .tile .label { color: var(--dim); font-size: .8rem; }
          .tile .value { font-size: 1.6rem; font-variant-numeric: tabular-nums; }
          .charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 1rem; }
          .panel { background: var(--panel); border-radius: 8px; padding: .75rem 1rem; }
          .panel h2 { margin: 0 0 .5rem; font-size: .95rem; font-weight: 600; }
          canvas { width: 100%; height: 180px; display: block; }
          .legend { display: flex; gap: .9rem; flex-wrap: wrap; color: var(--dim); font-size: .8rem; margin-top: .4rem; }
          .legend span::before { content: ""; display: inline-block; width: .7rem; height: .7rem; border-radius: 2px;
                                 margin-right: .3rem; background: var(--c); vertical-align: -1px; }
          form { display: flex; gap: .5rem; }
          input { flex: 1; background: var(--bg); color: var(--text); border: 1px solid var(--line); border-radius: 6px;
                  padding: .5rem .6rem; font: inherit; }
          button { background: var(--alerting); color: #fff; border: 0; border-radius: 6px; padding: .5rem 1rem; font: inherit; cursor: pointer; }
          table { border-collapse: collapse; width: 100%; margin-top: .6rem; }
          td, th { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
          th { color: var(--dim); font-weight: normal; }
          .error { color: var(--expired); margin-top: .5rem; }
          #token-form { display: none; }
        </style>
        </head>
        <body data-updates="0">
        <header><h1>Pushgate</h1><span id="status">connecting…</span></header>
        <main>
          <form id="token-form"><input id="token" type="password" placeholder="admin token (admin.token)">
            <button>Use</button></form>
          <section class="tiles">
            <div class="tile"><div class="label">pushes / s</div><div class="value" id="rate-total">–</div></div>
            <div class="tile"><div class="label">alerting / s</div><div class="value" id="rate-alerting">–</div></div>
            <div class="tile"><div class="label">silent / s</div><div class="value" id="rate-silent">–</div></div>
            <div class="tile"><div class="label">accepted (total)</div><div class="value" id="accepted-total">–</div></div>
            <div class="tile"><div class="label">connected devices</div><div class="value" id="connected">–</div></div>
            <div class="tile"><div class="label">held now</div><div class="value" id="held-now">–</div></div>
            <div class="tile"><div class="label">deadline misses</div><div class="value" id="deadline-misses">–</div></div>
            <div class="tile"><div class="label">POST p50 / p99 (ms)</div><div class="value" id="post-latency">–</div></div>
            <div class="tile"><div class="label">to device p50 / p99 (ms)</div><div class="value" id="device-latency">–</div></div>
          </section>
          <section class="charts">
            <div class="panel"><h2>Push rate by class (per second, last 2 minutes)</h2><canvas id="rates"></canvas>
              <div class="legend"><span style="--c: var(--alerting)">alerting</span><span style="--c: var(--silent)">silent</span>
                <span style="--c: var(--other)">other</span></div></div>
            <div class="panel"><h2>Silent outcomes (per second)</h2><canvas id="outcomes"></canvas>
              <div class="legend"><span style="--c: var(--woken)">woken on budget</span><span style="--c: var(--held)">held</span>
                <span style="--c: var(--released)">released (piggyback)</span><span style="--c: var(--coalesced)">coalesced</span>
                <span style="--c: var(--expired)">expired / overflowed</span></div></div>
          </section>
          <section class="panel" id="fleet" hidden>
            <h2>Freshness at open (the simulated iPhones in this process)</h2>
            <div id="fleet-table"></div>
          </section>
          <section class="panel">
            <h2>Look up an apns-id or a device token</h2>
            <form id="lookup"><input id="query" placeholder="apns-id or apns-unique-id (UUID), or device token (hex)" autocomplete="off">
              <button>Look up</button></form>
            <div id="lookup-result"></div>
          </section>
        </main>
        <script>
        "use strict";
        const keep = 120;
        const history = [];
        const css = name => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
        const $ = id => document.getElementById(id);
        let token = sessionStorage.getItem("pushgate-admin-token") || "";
        const headers = () => token ? { authorization: "Bearer " + token } : {};

        function number(value, digits = 0) {
          return value == null ? "–" : value.toLocaleString("en", { maximumFractionDigits: digits, minimumFractionDigits: digits });
        }

        function show(f) {
          history.push(f);
          if (history.length > keep) history.shift();
          const total = f.rates.alerting + f.rates.silent + f.rates.other;
          $("rate-total").textContent = number(total, 1);
          $("rate-alerting").textContent = number(f.rates.alerting, 1);
          $("rate-silent").textContent = number(f.rates.silent, 1);
          $("accepted-total").textContent = number(f.acceptedTotal);
          $("connected").textContent = number(f.connectedDevices);
          $("held-now").textContent = number(f.heldNow);
          $("deadline-misses").textContent = number(f.deadlineMisses);
          const pair = p => p ? number(p.p50, p.p50 < 1 ? 2 : 1) + " / " + number(p.p99, p.p99 < 1 ? 2 : 1) : "–";
          $("post-latency").textContent = pair(f.postLatencyMs);
          $("device-latency").textContent = pair(f.deviceLatencyMs);
          document.body.dataset.updates = String(Number(document.body.dataset.updates) + 1);
          document.body.dataset.accepted = history.map(h => h.acceptedTotal).join(",");
          drawLines($("rates"), history.map(h => [h.rates.alerting, h.rates.silent, h.rates.other]),
                    ["--alerting", "--silent", "--other"]);
          drawBars($("outcomes"), history.map(h => ["woken_on_budget", "held", "released", "coalesced", "expired"]
                    .map(k => h.outcomes[k] / h.seconds)), ["--woken", "--held", "--released", "--coalesced", "--expired"]);
        }

        function canvasContext(canvas) {
          const ratio = window.devicePixelRatio || 1;
          canvas.width = canvas.clientWidth * ratio;
          canvas.height = canvas.clientHeight * ratio;
          const g = canvas.getContext("2d");
          g.scale(ratio, ratio);
          return [g, canvas.clientWidth, canvas.clientHeight];
        }

        function axis(g, w, h, top) {
          g.strokeStyle = css("--line"); g.fillStyle = css("--dim"); g.font = "11px system-ui";
          for (let i = 0; i <= 4; i++) {
            const y = h - 14 - (h - 24) * i / 4;
            g.beginPath(); g.moveTo(34, y); g.lineTo(w, y); g.stroke();
            g.fillText(number(top * i / 4, top < 8 ? 1 : 0), 0, y + 4);
          }
        }

        function drawLines(canvas, rows, colours) {
          const [g, w, h] = canvasContext(canvas);
          const top = Math.max(1, ...rows.flat()) * 1.1;
          axis(g, w, h, top);
          colours.forEach((colour, series) => {
            g.strokeStyle = css(colour); g.lineWidth = 2; g.beginPath();
            rows.forEach((row, i) => {
              const x = 34 + (w - 34) * (i + keep - rows.length) / (keep - 1);
              const y = h - 14 - (h - 24) * row[series] / top;
              i ? g.lineTo(x, y) : g.moveTo(x, y);
            });
            g.stroke();
          });
        }

        function drawBars(canvas, rows, colours) {
          const [g, w, h] = canvasContext(canvas);
          const top = Math.max(1, ...rows.map(r => r.reduce((a, b) => a + b, 0))) * 1.1;
          axis(g, w, h, top);
          const width = (w - 34) / keep;
          rows.forEach((row, i) => {
            let y = h - 14;
            const x = 34 + width * (i + keep - rows.length);
            row.forEach((value, series) => {
              const height = (h - 24) * value / top;
              g.fillStyle = css(colours[series]);
              g.fillRect(x, y - height, Math.max(1, width - 1), height);
              y -= height;
            });
          });
        }

        async function follow() {
          try {
            const response = await fetch("/v1/live", { headers: headers(), cache: "no-store" });
            if (response.status === 401) { askForToken(); return; }
            $("status").textContent = "live"; $("status").className = "live";
            const reader = response.body.getReader();
            const decoder = new TextDecoder();
            let buffer = "";
            for (;;) {
              const { value, done } = await reader.read();
              if (done) break;
              buffer += decoder.decode(value, { stream: true });
              let end;
              while ((end = buffer.indexOf("\n\n")) >= 0) {
                const event = buffer.slice(0, end); buffer = buffer.slice(end + 2);
                for (const line of event.split("\n")) if (line.startsWith("data: ")) show(JSON.parse(line.slice(6)));
              }
            }
          } catch (error) { /* the gateway went away: try again */ }
          $("status").textContent = "reconnecting…"; $("status").className = "";
          setTimeout(follow, 2000);
        }

        function askForToken() {
          $("status").textContent = "the admin API needs its token"; $("token-form").style.display = "flex";
        }
        $("token-form").addEventListener("submit", event => {
          event.preventDefault();
          token = $("token").value.trim(); sessionStorage.setItem("pushgate-admin-token", token);
          $("token-form").style.display = "none"; follow();
        });

        function cell(value) {
          if (value === null || value === undefined) return "–";
          if (Array.isArray(value)) return value.length ? value.map(cell).join("<br>") : "–";
          if (typeof value === "object") return Object.entries(value).map(([k, v]) => k + ": " + cell(v)).join(", ");
          return String(value).replace(/[&<>]/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]);
        }

        $("lookup").addEventListener("submit", async event => {
          event.preventDefault();
          const query = $("query").value.trim();
          if (!query) return;
          const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(query);
          const path = (uuid ? "/v1/notifications/" : "/v1/tokens/") + encodeURIComponent(query);
          const out = $("lookup-result");
          try {
            const response = await fetch(path, { headers: headers() });
            const body = await response.json();
            if (!response.ok) { out.innerHTML = '<div class="error">' + cell(body.error || response.status) + "</div>"; return; }
            if (body.steps) {
              out.innerHTML = '<div class="state">' + cell(body.deliveryState) + "</div>" +
                "<div>apns-id " + cell(body.apnsID) + " · apns-unique-id " + cell(body.uniqueID) + "</div>" +
                "<table><tr><th>when</th><th>event</th><th>rule</th><th>state</th></tr>" + body.steps.map(s =>
                "<tr><td>" + new Date(s.at).toISOString().replace("T", " ").slice(0, 23) + "</td><td>" + cell(s.event) +
                "</td><td>" + cell(s.rule) + "</td><td>" + cell(s.state) + "</td></tr>").join("") + "</table>";
            } else {
              out.innerHTML = "<table>" + Object.entries(body).map(([k, v]) =>
                "<tr><th>" + cell(k) + "</th><td>" + cell(v) + "</td></tr>").join("") + "</table>";
            }
          } catch (error) { out.innerHTML = '<div class="error">' + cell(String(error)) + "</div>"; }
        });

        follow();

        // A fleet of simulated iPhones in the gateway's process (pushgate demo) shows its freshness table.
        async function fleet() {
          try {
            const response = await fetch("/v1/fleet", { headers: headers(), cache: "no-store" });
            if (response.ok) {
              const figures = await response.json();
              const percent = v => v == null ? "–" : number(v * 100) + " %";
              const seconds = v => v == null ? "–" : number(v) + " s";
              const sum = o => Object.values(o || {}).reduce((a, b) => a + b, 0);
              $("fleet").hidden = false;
              $("fleet-table").innerHTML = "<table><tr><th>iPhones</th><th>strategy</th><th>opens</th><th>fresh at open</th>" +
                "<th>age p50 / p90</th><th>silent wakes (new content)</th><th>terminations</th><th>relaunches</th></tr>" +
                figures.report.rows.map(r => "<tr><td>" + cell(r.profile) + "</td><td>" + cell(r.strategy) + "</td><td>" +
                  number(r.opens) + "</td><td>" + percent(r.freshAtOpen) + "</td><td>" + seconds(r.ageP50Seconds) + " / " +
                  seconds(r.ageP90Seconds) + "</td><td>" + number(r.silentWakes) + " (" + number(r.silentWakesWithNewContent) +
                  ")</td><td>" + number(sum(r.terminations)) + "</td><td>" + number(r.relaunches) + "</td></tr>").join("") +
                "</table>";
              document.body.dataset.fleetOpens = String(figures.report.rows.reduce((a, r) => r.profile === "all" ? a : a + r.opens, 0));
            }
          } catch (error) { /* not there, or the gateway went away */ }
          setTimeout(fleet, 3000);
        }
        fleet();
        </script>
        </body>
        </html>
        """#
}
