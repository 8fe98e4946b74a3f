/**
 * This pserver's side of elastic placement (docs/explanation/elastic.md): {@code PlacementFollower}
 * is the door for the registration ({@code follow}) and the only writer of the committed map and
 * the moves in progress, which the shard holds ({@code ShardMoves}); {@code MoveRequests} is the
 * door of the SlotMoves adapter ({@code pserver.grpc.SlotMovesGrpcService}) for the master's move
 * coordinator ({@code MoveOut}) and for the old owner ({@code MoveIn}), run by {@code OutgoingMove}
 * and {@code IncomingMove}.
 */
package dev.paramserver.pserver.placement;
