#!/usr/bin/perl
# SPDX-License-Identifier: Apache-2.0
# A horizontal bar chart as a self-contained SVG, for the HTTP load benchmark's figures
# (bench/http/run.sh writes <out>.rps.tsv and <out>.cpu.tsv and renders them with this script).
# Core Perl only, so that it runs wherever run.sh does.
#
#   perl bars.pl <chart.tsv >chart.svg
#
# Input (UTF-8, tab-separated):
#   # <title><TAB><unit>                       first line
#   <label><TAB><value>[<TAB><annotation>]     one line per bar, in the order to draw them
# The value is a non-negative decimal number; it is printed as given, with thousands separators,
# followed by the unit. The annotation, when present, is printed in grey under its bar.
# The output depends only on the input (no date, no randomness). Exit status 2 on malformed input.
use strict;
use warnings;
use open qw(:std :encoding(UTF-8));
use POSIX qw(ceil floor);

sub fail { print STDERR "bars.pl: $_[0]\n"; exit 2; }

my $head = <STDIN>;
fail('empty input') unless defined $head;
$head =~ s/\r?\n\z//;
fail('the first line must be "# title<TAB>unit"') unless $head =~ /^# ?([^\t]*)\t([^\t]*)\z/;
my ($title, $unit) = ($1, $2);

my @bars;  # [label, value text, annotation]
while (my $line = <STDIN>) {
  $line =~ s/\r?\n\z//;
  next if $line =~ /^\s*\z/;
  my ($label, $value, $note, @extra) = split /\t/, $line, -1;
  fail("line $.: expected label<TAB>value[<TAB>annotation]") if !defined $value || @extra;
  fail("line $.: \"$value\" is not a non-negative number") unless $value =~ /^[0-9]+(?:\.[0-9]+)?\z/;
  push @bars, [$label, $value, $note // ''];
}
fail('no bars') unless @bars;

sub xml {
  my ($s) = @_;
  $s =~ s/&/&amp;/g;
  $s =~ s/</&lt;/g;
  $s =~ s/>/&gt;/g;
  $s =~ s/"/&quot;/g;
  $s =~ s/'/&apos;/g;
  return $s;
}
sub grouped {  # "11846.5" -> "11,846.5"
  my ($n) = @_;
  my ($int, $frac) = $n =~ /^([0-9]+)(\.[0-9]+)?\z/;
  1 while $int =~ s/^([0-9]+)([0-9]{3})/$1,$2/;
  return $int . ($frac // '');
}
sub px { return sprintf '%.1f', $_[0]; }
# Text widths are estimated (no font metrics without dependencies): an average sans-serif glyph
# is a little over half the font size wide; 0.62 leaves a margin for wide digits and capitals.
sub text_width { my ($text, $size) = @_; return length($text) * $size * 0.62; }

# Layout. Sizes in px; the chart is 720 wide, its height follows the number of bars.
my $width = 720;
my ($margin, $font, $small) = (16, 12, 10);
my $with_notes = grep { $_->[2] ne '' } @bars;
my $bar_h = 18;
my $row_h = $with_notes ? 40 : 28;
my $top = 48;  # below the title

my $label_w = 0;
my $value_w = 0;
for my $b (@bars) {
  my $lw = text_width($b->[0], $font);
  my $vw = text_width(grouped($b->[1]) . " $unit", $font);
  $label_w = $lw if $lw > $label_w;
  $value_w = $vw if $vw > $value_w;
}
$label_w = 240 if $label_w > 240;  # a longer label is cut at the left edge rather than squash the bars
my $x0 = $margin + $label_w + 8;
my $plot_w = $width - $x0 - $value_w - 8 - $margin;
$plot_w = 120 if $plot_w < 120;

# The axis runs from 0 to a round number at or above the largest value, in 1-2-5 steps.
my $max = 0;
for my $b (@bars) { $max = $b->[1] if $b->[1] > $max; }
my $step = 1;
if ($max > 0) {
  my $raw = $max / 5;
  my $mag = 10**floor(log($raw) / log(10));
  for my $m (1, 2, 5, 10) { $step = $m * $mag; last if $step >= $raw; }
}
my $ticks = $max > 0 ? ceil($max / $step - 1e-9) : 1;
my $decimals = $step < 1 ? ceil(-log($step) / log(10) - 1e-9) : 0;  # enough to tell the ticks apart
my $axis_max = $ticks * $step;
my $scale = $plot_w / $axis_max;

my $plot_h = @bars * $row_h;
my $axis_y = $top + $plot_h;
my $height = $axis_y + 40;

my @svg;
push @svg, '<?xml version="1.0" encoding="UTF-8"?>';
push @svg, sprintf '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
                   . 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="%d">',
                   $width, $height, $width, $height, $font;
push @svg, '<title>' . xml($title) . '</title>';
push @svg, sprintf '<rect width="%d" height="%d" fill="#ffffff"/>', $width, $height;
push @svg, sprintf '<text x="%d" y="28" font-size="15" font-weight="bold" fill="#222222">%s</text>',
                   $margin, xml($title);

# The light axis: a grid line and a label at each step, the unit after the last label.
for my $i (0 .. $ticks) {
  my $x = px($x0 + $i * $step * $scale);
  my $tick_text = grouped(sprintf '%.*f', $decimals, $step * $i);
  push @svg, sprintf '<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="%s" stroke-width="1"/>',
                     $x, $top - 6, $x, $axis_y, $i == 0 ? '#999999' : '#e4e4e4';
  push @svg, sprintf '<text x="%s" y="%d" font-size="%d" fill="#777777" text-anchor="middle">%s</text>',
                     $x, $axis_y + 16, $small, xml($tick_text);
}
push @svg, sprintf '<text x="%s" y="%d" font-size="%d" fill="#777777" text-anchor="end">%s</text>',
                   px($x0 + $plot_w), $axis_y + 32, $small, xml($unit);

for my $i (0 .. $#bars) {
  my ($label, $value, $note) = @{$bars[$i]};
  my $y = $top + $i * $row_h + 4;
  my $w = $value * $scale;
  my $mid = px($y + $bar_h / 2 + $font * 0.35);
  push @svg, sprintf '<text x="%s" y="%s" fill="#222222" text-anchor="end">%s</text>',
                     px($x0 - 8), $mid, xml($label);
  push @svg, sprintf '<rect x="%s" y="%d" width="%s" height="%d" fill="#4c78a8"/>', px($x0), $y, px($w), $bar_h;
  push @svg, sprintf '<text x="%s" y="%s" fill="#222222">%s</text>',
                     px($x0 + $w + 6), $mid, xml(grouped($value) . " $unit");
  push @svg, sprintf '<text x="%s" y="%d" font-size="%d" fill="#777777">%s</text>',
                     px($x0), $y + $bar_h + 12, $small, xml($note)
    if $note ne '';
}
push @svg, '</svg>';
print join("\n", @svg), "\n";
