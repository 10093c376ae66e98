# SPDX-License-Identifier: Apache-2.0
# The figures of the HTTP load benchmark (bench/http/run.sh --out FILE; docs/performance.md,
# "HTTP load (wrk, loopback)"), as SVGs beside its data files:
#
#   gnuplot -e "out='FILE'" bench/http/plot.gp
#
# From FILE.tsv (a load run), one bar per target in the file's order:
#   FILE.rps.svg      requests per second (lifecycles per second for the churn targets): the
#                     median of the rounds as the bar and its label, each round as a dot; behind a
#                     balancer, the label adds the ratio of the medians to the same call without it
#   FILE.cpu.svg      server CPU time per request (per lifecycle), the same way
#   FILE.latency.svg  latency percentiles p50, p90, p99 and p99.9 per target (medians of the
#                     rounds; wrk's, of one HTTP request), log scale
# From FILE.idle.tsv (an idle run):
#   FILE.idle.svg     memory per idle session and per session with an open GET stream, per server
# A missing data file draws nothing (run.sh --only idle writes no FILE.tsv, --only load no
# FILE.idle.tsv); a file with no data row is an error (exit status 2).
#
# The data files (tab-separated, written by run.sh): comment lines "# <key>: <text>" (machine: the
# date, nproc and CPU model; load: the wrk settings; cpu: what the CPU column counts; idle: the
# method), then one header line naming the columns, then one row per target or server. FILE.tsv:
#   target per median_rps rps_r1 .. rps_rN median_cpu_us cpu_r1 .. cpu_rN p50_us p90_us p99_us
#   p999_us rss_kb base rps_ratio cpu_ratio
# (per: "request", or "lifecycle" for the churn targets; N rounds, from the "# rounds: N" line;
# base, rps_ratio, cpu_ratio: the target without the balancer and the ratios of the medians to it,
# "-" when there is none). FILE.idle.tsv:
#   server sessions bytes_per_session streams bytes_per_stream
# Text is sized to stay readable when a figure is shown 800 px wide.
#
# A second use draws one plain bar chart of any table in the older two-column form (the docs'
# hand-made pictures, docs/performance.md):
#
#   gnuplot -e "bars='IN.tsv'; svg='OUT.svg'" bench/http/plot.gp
#
#   # <title><TAB><unit>                       first line
#   <label><TAB><value>[<TAB><annotation>]     one line per bar, top to bottom
# Each bar is labelled with its value and unit, its annotation in grey under it.

if (!exists("out") && !(exists("bars") && exists("svg"))) {
  print "plot.gp: usage: gnuplot -e \"out='FILE'\" plot.gp (draws FILE.tsv and FILE.idle.tsv)"
  print "         or: gnuplot -e \"bars='IN.tsv'; svg='OUT.svg'\" plot.gp"
  exit status 2
}

set encoding utf8
set datafile separator "\t"
set datafile columnheaders

# Width of every figure, in px; heights follow the number of rows.
width = 800
font_main = "DejaVu Sans,13"
bar_color = "#4c78a8"

# The value of "# <key>: <text>" in a data file's comment lines.
meta(file, key) = system(sprintf("sed -n 's/^# %s: //p' '%s' | head -1", key, file))
exists_file(file) = system(sprintf("test -s '%s' && echo 1 || echo 0", file)) + 0
# The first column of a data file's rows (the header and comment lines left out), space-separated.
names(file) = system(sprintf("awk -F'\t' '/^#/ { next } seen++ { print $1 }' '%s'", file))
# 11846.5 -> "11,847": thousands separators for the value labels.
grouped(x) = (x < 1000 ? sprintf("%.0f", x) : grouped(int(x / 1000)) . sprintf(",%03d", int(x) % 1000))
# A number with 2 significant-ish decimals below 10, none above.
short(x) = (x < 10 ? sprintf("%.2g", x) : grouped(x))

if (exists("bars")) {
  # The title and the unit from the first line; the bars from the others.
  title_line = system(sprintf("head -1 '%s' | sed 's/^# *//'", bars))
  tab = strstrt(title_line, "\t")
  if (tab < 1) { print "plot.gp: the first line of ".bars." must be \"# title<TAB>unit\""; exit status 2 }
  bars_title = title_line[1:tab - 1]
  bars_unit = title_line[tab + 1:]
  set datafile separator "\t"
  set datafile nocolumnheaders
  stats bars using 2 nooutput
  n = STATS_records
  if (n < 1) { print "plot.gp: ".bars." has no bar"; exit status 2 }
  m = STATS_max
  set terminal svg size width, 120 + 50 * n dynamic noenhanced font font_main background rgb "white"
  set output svg
  set title bars_title
  set border 1
  set xtics nomirror
  set ytics scale 0
  set grid xtics lc rgb "#dddddd"
  set xrange [0 : (m > 0 ? m * 1.3 : 1)]
  set yrange [n - 0.1 : -0.6]
  set xlabel bars_unit
  set lmargin 24
  set style fill solid 1.0 noborder
  plot bars using ($2 / 2):0:($2 / 2):(0.22):ytic(1) with boxxyerror lc rgb bar_color notitle, \
       bars using 2:0:(grouped($2) . " " . bars_unit) with labels left offset 0.8, 0 font ",12" notitle, \
       bars using (0):0:(strcol(3)) with labels left offset 0, -1.3 font ",11" tc rgb "#666666" notitle
  unset output
  exit
}

data = out . ".tsv"
idle = out . ".idle.tsv"

if (exists_file(data)) {
  machine = meta(data, "machine")
  settings = meta(data, "load")
  cpu_what = meta(data, "cpu")
  rounds = meta(data, "rounds") + 0
  if (rounds < 1) { print "plot.gp: ".data." names no rounds"; exit status 2 }
  stats data using (column("median_rps")) nooutput
  n = STATS_records
  if (n < 1) { print "plot.gp: ".data." has no data row"; exit status 2 }
  # Whether a churn target is among them (its unit is a session lifecycle, not a request).
  stats data using (strcol("per") eq "lifecycle" ? 1 : 0) nooutput
  churn = STATS_max > 0
  # The largest round of each measure (the axes end beyond it). Every stats comes before the
  # ranges are set: a one-column stats only counts values within the y range.
  m_rps = 0
  m_cpu = 0
  do for [r = 1:rounds] {
    stats data using (column(sprintf("rps_r%d", r))) nooutput
    m_rps = (STATS_max > m_rps ? STATS_max : m_rps)
    stats data using (column(sprintf("cpu_r%d", r))) nooutput
    m_cpu = (STATS_max > m_cpu ? STATS_max : m_cpu)
  }
  stats data using (column("p999_us")) nooutput
  top = STATS_max > 0 ? STATS_max / 1000.0 : 1
  stats data using (column("p50_us") > 0 ? column("p50_us") : 1e9) nooutput
  bottom = STATS_min < 1e9 ? STATS_min / 1000.0 : 0.01

  # bars(kind, column prefix): one horizontal bar per target at its median, a dot per round.
  height = 170 + 44 * n
  set terminal svg size width, height dynamic noenhanced font font_main background rgb "white"
  set border 3
  set tics nomirror
  set grid xtics lc rgb "#dddddd"
  set yrange [n - 0.5 : -0.5]
  set ytics scale 0
  set key below horizontal
  set style fill solid 1.0 noborder
  set lmargin 18
  set rmargin 4

  # Throughput.
  set xrange [0 : (m_rps > 0 ? m_rps * 1.35 : 1)]
  set output out . ".rps.svg"
  set title sprintf("Throughput (bar: median of %d rounds; dots: each round)\n%s\n%s", rounds, settings, machine)
  set xlabel (churn ? "requests per second (churn targets: session lifecycles per second)" : "requests per second")
  rps_label(v, per, base, ratio) = grouped(v) . (per eq "lifecycle" ? " lifecycles/s" : " req/s") . \
                                   (base eq "-" || base eq "" ? "" : sprintf(" (%s× %s)", ratio, base))
  plot data using (column("median_rps") / 2):0:(column("median_rps") / 2):(0.28):ytic(1) \
         with boxxyerror lc rgb bar_color title "median", \
       for [r = 1:rounds] data using (column(sprintf("rps_r%d", r))):0 \
         with points pt 7 ps 0.7 lc rgb "#222222" title (r == 1 ? "each round" : ""), \
       data using (column("median_rps")):0:(rps_label(column("median_rps"), strcol("per"), strcol("base"), \
                                                      strcol("rps_ratio"))) \
         with labels left offset 1.2, 1.0 font ",11" notitle
  unset output

  # CPU time per request.
  set xrange [0 : (m_cpu > 0 ? m_cpu * 1.35 : 1)]
  set output out . ".cpu.svg"
  set title sprintf("%s (bar: median of %d rounds; dots: each round)\n%s\n%s", cpu_what, rounds, settings, machine)
  set xlabel (churn ? "µs of CPU (user + system, /proc) per request; churn targets: per session lifecycle" \
                    : "µs of CPU (user + system, /proc) per request")
  cpu_label(v, per, base, ratio) = grouped(v) . (per eq "lifecycle" ? " µs/lifecycle" : " µs") . \
                                   (base eq "-" || base eq "" ? "" : sprintf(" (%s× %s)", ratio, base))
  plot data using (column("median_cpu_us") / 2):0:(column("median_cpu_us") / 2):(0.28):ytic(1) \
         with boxxyerror lc rgb bar_color title "median", \
       for [r = 1:rounds] data using (column(sprintf("cpu_r%d", r))):0 \
         with points pt 7 ps 0.7 lc rgb "#222222" title (r == 1 ? "each round" : ""), \
       data using (column("median_cpu_us")):0:(cpu_label(column("median_cpu_us"), strcol("per"), strcol("base"), \
                                                         strcol("cpu_ratio"))) \
         with labels left offset 1.2, 1.0 font ",11" notitle
  unset output

  # Latency percentiles: four bars per target, on a log axis in ms.
  reset
  set encoding utf8
  set datafile separator "\t"
  set datafile columnheaders
    set terminal svg size width, (n > 5 ? 600 : 480) dynamic noenhanced font font_main background rgb "white"
  set output out . ".latency.svg"
  set title sprintf("Latency percentiles of one HTTP request (medians of %d rounds)\n%s\n%s", rounds, settings, machine)
  set border 3
  set tics nomirror
  set logscale y 10
  set grid ytics mytics lc rgb "#dddddd", lc rgb "#f0f0f0"
  set ylabel "latency (ms, log scale)"
  set xrange [-0.6 : n - 0.4]
  set xtics scale 0 ()
  targets = names(data)
  do for [i = 1:n] { set xtics add (word(targets, i) i - 1) }
  if (n > 5) { set xtics rotate by -30 left }
  set key top left horizontal opaque box lc rgb "#bbbbbb"
  set style fill solid 1.0 noborder
  # The four percentiles: columns, names and colours; each bar 0.2 wide around its target.
  pcol(i) = word("p50_us p90_us p99_us p999_us", i)
  pname(i) = word("p50 p90 p99 p99.9", i)
  pcolor(i) = word("#9ecae1 #4c78a8 #f58518 #b22222", i)
  set yrange [10 ** floor(log10(bottom)) : 10 ** ceil(log10(top * 1.5))]
  plot for [i = 1:4] data using ($0 + (i - 2.5) * 0.2):(column(pcol(i)) / 1000.0):(0.19) \
         with boxes lc rgb pcolor(i) title pname(i)
  unset output
}

if (exists_file(idle)) {
  reset
  set encoding utf8
  set datafile separator "\t"
  set datafile columnheaders
  set datafile missing "NaN"
  machine = meta(idle, "machine")
  method = meta(idle, "idle")
  stats idle using (column("bytes_per_session")) nooutput
  n = STATS_records
  if (n < 1) { print "plot.gp: ".idle." has no data row"; exit status 2 }
  m = STATS_max
  stats idle using (column("bytes_per_stream")) nooutput
  m = (STATS_max > m ? STATS_max : m) / 1024.0
  set terminal svg size width, 480 dynamic noenhanced font font_main background rgb "white"
  set output out . ".idle.svg"
  set title sprintf("Memory per idle session and per session with an open GET stream\n%s\n%s", method, machine)
  set border 3
  set tics nomirror
  set grid ytics lc rgb "#dddddd"
  set ylabel "KiB of server RSS each (RSS delta / count)"
  set xrange [-0.6 : n - 0.4]
  set yrange [0 : (m > 0 ? m * 1.25 : 1)]
  set xtics scale 0
  set bmargin 5
  set key top left opaque box lc rgb "#bbbbbb"
  set style fill solid 1.0 noborder
  kib(b) = (b / 1024.0 < 10 ? sprintf("%.1f KiB", b / 1024.0) : sprintf("%s KiB", grouped(b / 1024.0)))
  server_tic(name, sessions, streams) = sprintf("%s\n(%s sessions, %s streams)", name, sessions, streams)
  plot idle using ($0 - 0.18):(column("bytes_per_session") / 1024.0):(0.34): \
              xtic(server_tic(strcol("server"), strcol("sessions"), strcol("streams"))) \
         with boxes lc rgb "#9ecae1" title "idle session", \
       idle using ($0 + 0.18):(column("bytes_per_stream") / 1024.0):(0.34) \
         with boxes lc rgb "#4c78a8" title "session with an open GET stream", \
       idle using ($0 - 0.18):(column("bytes_per_session") / 1024.0):(kib(column("bytes_per_session"))) \
         with labels offset 0, 0.8 font ",11" notitle, \
       idle using ($0 + 0.18):(column("bytes_per_stream") / 1024.0):(kib(column("bytes_per_stream"))) \
         with labels offset 0, 0.8 font ",11" notitle
  unset output
}
