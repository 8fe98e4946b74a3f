/**
 * Who leads: {@link dev.paramserver.master.election.MasterElection} (a state machine on one thread)
 * is the door for the wiring, the console, the coordinator and the health check; on winning it
 * loads the job ({@code MasterJob.startServing}) and on losing it stops serving at once.
 */
package dev.paramserver.master.election;
