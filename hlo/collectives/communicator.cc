#include "hlo/collectives/communicator.h"

namespace kiln {
namespace {
thread_local Communicator* current_communicator = nullptr;
}  // namespace

Communicator* CurrentCommunicator() { return current_communicator; }

ScopedCommunicator::ScopedCommunicator(Communicator* c) : previous_(current_communicator) {
  current_communicator = c;
}
ScopedCommunicator::~ScopedCommunicator() { current_communicator = previous_; }

}  // namespace kiln
