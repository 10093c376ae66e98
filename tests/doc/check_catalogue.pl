#!/usr/bin/perl
# SPDX-License-Identifier: Apache-2.0
# Checks the bad-input catalogue of docs/security.md against the tree: every row names at least
# one test file that exists, and every test name quoted after a file is a string literal of that
# file ("a name ..." ending in three dots: a prefix of such literals). A renamed or deleted test
# fails this check instead of leaving the catalogue pointing at nothing.
#   perl check_catalogue.pl <source dir>
use strict;
use warnings;

my $root = shift @ARGV or die "usage: check_catalogue.pl <source dir>\n";
my $doc = "$root/docs/security.md";
open(my $fh, '<:encoding(UTF-8)', $doc) or die "cannot read $doc: $!\n";
my @lines = <$fh>;
close $fh;

my %text;  # file -> contents
sub contents {
  my ($path) = @_;
  return $text{$path} if exists $text{$path};
  my $full = "$root/$path";
  return $text{$path} = undef unless -f $full;
  open(my $f, '<:encoding(UTF-8)', $full) or return $text{$path} = undef;
  local $/;
  $text{$path} = <$f>;
  close $f;
  return $text{$path};
}

my ($in, $rows, $names, @errors) = (0, 0, 0);
for my $i (0 .. $#lines) {
  my $line = $lines[$i];
  chomp $line;
  if ($line =~ /^## /) { $in = ($line eq '## Bad-input catalogue'); next; }
  next unless $in && $line =~ /^\|/;
  next if $line =~ /^\|\s*hostile input\s*\|/ || $line =~ /^\|[-|\s]+\|$/;
  ++$rows;
  my $where = "docs/security.md:" . ($i + 1);
  my @cells = split /(?<!\\)\|/, $line;
  my $cell = $cells[-1] // '';
  $cell = $cells[-2] if $cell =~ /^\s*$/ && @cells > 1;
  my @parts = split /`(tests\/[^`]+)`/, $cell;
  if (@parts < 2) { push @errors, "$where: the row names no test file"; next; }
  for (my $k = 1; $k < @parts; $k += 2) {
    my ($path, $after) = ($parts[$k], $parts[$k + 1] // '');
    my $body = contents($path);
    if (!defined $body) { push @errors, "$where: $path does not exist"; next; }
    while ($after =~ /"((?:\\.|[^"\\])*)"/g) {
      my $name = $1;
      ++$names;
      my $needle = $name =~ s/\s*\.\.\.$//r;
      my $found = $name =~ /\.\.\.$/ ? index($body, "\"$needle") >= 0 : index($body, "\"$name\"") >= 0;
      push @errors, "$where: $path has no test \"$name\"" unless $found;
    }
  }
}
push @errors, "docs/security.md: no catalogue rows found" if $rows == 0;
if (@errors) {
  print STDERR "$_\n" for @errors;
  printf STDERR "%d problem(s) in %d rows\n", scalar @errors, $rows;
  exit 1;
}
print "bad-input catalogue: $rows rows, $names test names, every one found\n";
