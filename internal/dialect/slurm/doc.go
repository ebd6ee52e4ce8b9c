// Package slurm is the Slurm dialect: command builders for sinfo, squeue, sacct,
// scontrol, sbatch and scancel, and pure parsers of their delimited text output as
// printed by Slurm 22.05 and later. Nothing here runs a process.
package slurm
