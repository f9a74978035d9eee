# gnuplot -e "dir='DIR'; stamp='STAMP'; n=N" bench/plots.gp
# latency.dat: one block per cold-start command (sorted samples, CDF);
# density.dat: the density curve.
set terminal pngcairo size 900,520 noenhanced font ",10"
set grid

set output dir.'/'.stamp.'-latency.png'
set title 'Cold start of /bin/true: cumulative distribution (interleaved rounds)'
set xlabel 'wall time (ms, log scale)'
set ylabel 'fraction of runs'
set logscale x
set key bottom right
plot for [i=0:n-1] dir.'/latency.dat' index i using 1:2 with lines lw 2 title columnheader(1)
unset logscale x

set output dir.'/'.stamp.'-density.png'
set title 'Idle sandboxes (agentjail run -- sleep): host memory and cold start as they add up'
set xlabel 'idle sandboxes alive'
set ylabel 'MiB'
set y2label 'cold start median (ms)'
set y2tics
set ytics nomirror
set key top left
plot dir.'/density.dat' using 1:6 with linespoints lw 2 title 'agentjail + init PSS + cgroup memory, all sandboxes (MiB)', \
     dir.'/density.dat' using 1:2 with linespoints lw 2 title 'MemFree drop, machine-wide (MiB)', \
     dir.'/density.dat' using 1:5 axes x1y2 with linespoints lw 2 title 'cold start of one more (ms)'

# scale.dat: the service's curve (written only when the service ran)
if (system('test -s '.dir.'/scale.dat && echo y') eq "y") {
  set output dir.'/'.stamp.'-scale.png'
  set title 'agentjail serve: create + exec true + delete as idle sandboxes add up'
  set xlabel 'idle sandboxes alive in the service'
  set ylabel 'latency median (ms)'
  set y2label 'memory per sandbox (MiB)'
  set y2tics
  set ytics nomirror
  set key top left
  plot dir.'/scale.dat' using 1:2 with linespoints lw 2 title 'one client (ms)', \
       dir.'/scale.dat' using 1:3 with linespoints lw 2 title 'concurrent clients, each (ms)', \
       dir.'/scale.dat' using 1:4 axes x1y2 with linespoints lw 2 title 'host memory per idle sandbox (MiB)'
}
